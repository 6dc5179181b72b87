-- Issue 24: reclaim exemptions by reservation and by label need them on the job records.
-- reservation: the advanced reservation the job ran in (sacct `Reservation`, the JSON's and slurmrestd's
-- `reservation`); '' when it ran in none; NULL when the source did not say (records stored before this
-- migration, `sacct -P` dumps without the column), which a reclaim exemption treats as unknown.
-- labels: the scheduler's labels as a JSON object text; '{}' for Slurm records (Slurm has no labels);
-- NULL when unknown.
ALTER TABLE jobs ADD COLUMN reservation VARCHAR;
ALTER TABLE jobs ADD COLUMN labels VARCHAR;
