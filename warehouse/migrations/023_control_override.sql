-- Issue 21: a quota plan whose replay makes a protected objective worse (the inference reserve, a
-- queue's maximum wait, a protected scenario's wait) is approved only with an override: the reason
-- is stored on the approval's control action, beside who approved it and when.
ALTER TABLE control_actions ADD COLUMN override VARCHAR;
