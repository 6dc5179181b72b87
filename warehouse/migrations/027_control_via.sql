-- Issue 22: an action taken through a relaying token (a sign-in proxy or the dashboard acting for a
-- person) names both: `actor` is the person, `via` the token's identity that carried the request
-- (null for a person's own token or the CLI). A reviewer can then tell "alice in the dashboard" from
-- "alice with her own token", and find every action a leaked relay token took.
ALTER TABLE control_actions ADD COLUMN via VARCHAR;
