-- Idle and idle-held GPU-minutes per day, scenario and team (sla/results.py DAILY_USAGE), so the
-- dashboards draw idle-held GPU-hours by day from the stored month instead of its minutes.
-- Months stored before this migration keep a null: they were not counted, which is not zero.

ALTER TABLE daily_usage ADD COLUMN idle_minutes BIGINT;
ALTER TABLE daily_usage ADD COLUMN idle_held_minutes BIGINT;
