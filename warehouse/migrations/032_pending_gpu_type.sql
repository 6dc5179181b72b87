-- Issue 24: the GPU type a waiting job asks for in the live queue (`gres/gpu:<type>` in squeue's or
-- slurmrestd's tres_req_str / tres_per_*), so the reclaimer frees a GPU only for jobs that can use it.
-- NULL: not said (any type of the partition).
ALTER TABLE pending_jobs ADD COLUMN gpu_type VARCHAR;
