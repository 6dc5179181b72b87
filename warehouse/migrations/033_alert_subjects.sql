-- An alert whose line names its subject in a label other than `cluster` (queue_wait: `queue`,
-- interactive_limits: `team`, burn_rate: `service`) was recorded without its subject. The alert as
-- delivered (`body`) holds the label; take it from there.
UPDATE alerts
SET subject = json_extract_string(body, '$.labels.' || CASE line
    WHEN 'queue_wait' THEN 'queue'
    WHEN 'interactive_limits' THEN 'team'
    WHEN 'burn_rate' THEN 'service'
    ELSE 'subject' END)
WHERE subject IS NULL;
