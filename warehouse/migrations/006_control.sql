-- Control actions taken through the service's API: the audit trail, and the state it implies.
-- A plan's decision is its latest plan.approve / plan.reject row; an alert is silenced until the
-- latest alert.silence row's `until`, and acknowledged once an alert.acknowledge row exists.
CREATE TABLE control_actions (
    action_id  VARCHAR PRIMARY KEY,       -- random id, returned to the caller
    acted_at   TIMESTAMP NOT NULL,        -- naive UTC
    actor      VARCHAR NOT NULL,          -- the token's identity (never the token)
    action     VARCHAR NOT NULL,          -- plan.approve | plan.reject | alert.silence | alert.acknowledge | review.trigger
    target     VARCHAR NOT NULL,          -- plan id, alert fingerprint, or month
    until_ts   TIMESTAMP,                 -- alert.silence: end of the silence
    reason     VARCHAR                    -- free text from the caller, stored as given
);
