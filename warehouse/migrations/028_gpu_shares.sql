-- Issue 25: capacity in whole-GPU equivalents. `share` is what a row is worth in whole GPUs (1 for a
-- GPU, 1/7 for a 1g.10gb MIG instance of an H100 or A100, 2/7 for 2g.20gb ...); `card_gpu` is the
-- physical card's device index (the row's own `gpu` for a whole GPU, the parent device for a MIG
-- instance), so power and energy, which dcgm-exporter repeats on every instance, count once per card;
-- `mig_profile` is the instance's GPU_I_PROFILE (null for a whole GPU). `jobs.gpu_equivalents` is a
-- job's allocation in whole GPUs where the scheduler gave a fraction (a MIG slice, a shard, a
-- Kueue/Volcano GPU fraction); null means `gpus_allocated` whole GPUs.
ALTER TABLE gpus ADD COLUMN share DOUBLE DEFAULT 1.0;
ALTER TABLE gpus ALTER COLUMN share SET NOT NULL;
ALTER TABLE gpus ADD COLUMN card_gpu SMALLINT;
ALTER TABLE gpus ADD COLUMN mig_profile VARCHAR;

-- Rows stored before: MIG instances were numbered 1000 + 100 x device + GPU_I_ID and their model
-- name ended in "MIG <profile>". Their share follows the slices of the profile (A30: 4 per card,
-- every other MIG-capable card: 7); a name that does not parse keeps share 1, as before.
UPDATE gpus SET card_gpu = CASE WHEN gpu >= 1000 THEN (gpu - 1000) // 100 ELSE gpu END;
UPDATE gpus SET mig_profile = nullif(regexp_extract(model_name, ' MIG (\S+)$', 1), '') WHERE gpu >= 1000;
UPDATE gpus SET share = least(1.0, CAST(regexp_extract(mig_profile, '^(?:\d+c\.)?(\d+)g\.', 1) AS DOUBLE)
        / CASE WHEN upper(model_name) LIKE '%A30%' OR upper(model_name) LIKE '%RTX PRO 6000%' THEN 4 ELSE 7 END)
    WHERE regexp_matches(mig_profile, '^(?:\d+c\.)?\d+g\.');

ALTER TABLE jobs ADD COLUMN gpu_equivalents DOUBLE;
