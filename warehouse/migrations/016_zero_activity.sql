-- Held GPU-minutes at exactly zero engine activity per job (sla/results.py IDLE_BY_JOB
-- zero_activity_minutes): the review shows them next to the idle runs of 30 minutes or more.
-- Months stored before this migration keep a null: they were not counted, which is not zero.

ALTER TABLE idle_by_job ADD COLUMN zero_activity_minutes BIGINT;
