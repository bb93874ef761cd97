-- 0015: a verification's polls are not retries. Each poll of a step with
-- until is a new question, and its tries count from 1 again; a run's
-- attempts is 1 plus its retries, so a clean multi-step run is 1 however
-- many steps and polls it made. Like 0001 to 0014, this file never changes
-- once shipped.

-- poll: the poll of a verification the attempt belongs to, from 1; NULL
-- for a call that does not poll, and on rows written before this
-- migration.
ALTER TABLE attempts ADD COLUMN poll INTEGER CHECK (poll IS NULL OR poll >= 1);

-- Steps runs recorded before: their tries were numbered on through every
-- step's polls, and attempts counted every step and poll. A try of a step
-- after the first was a retry only when the try before it failed (its
-- verdict row has a code); after a try that answered, it was the next
-- poll. Recount those runs, and move the probe_hours sums along with them,
-- since pruning takes each result's attempts away from its hour.
CREATE TEMP TABLE recount AS
SELECT r.operation_id, r.probe, substr(r.started_at, 1, 13) AS hour, r.outcome,
       r.attempts AS old,
       1 + (SELECT count(*) FROM (
                SELECT DISTINCT a.step, a.try FROM attempts a
                WHERE a.operation_id = r.operation_id AND a.try > 1
                  AND EXISTS (SELECT 1 FROM attempts b
                              WHERE b.operation_id = a.operation_id AND b.step IS a.step
                                AND b.try = a.try - 1 AND b.code IS NOT NULL))) AS new
FROM results r
WHERE r.kind = 'steps' AND r.attempts > 1;

DELETE FROM temp.recount WHERE new = old;

UPDATE probe_hours SET
    passed_after_retries = passed_after_retries
        - (SELECT count(*) FROM temp.recount c
           WHERE c.probe = probe_hours.probe AND c.hour = probe_hours.hour AND c.outcome = 'pass' AND c.new = 1),
    retries = retries
        - (SELECT sum(c.old - c.new) FROM temp.recount c
           WHERE c.probe = probe_hours.probe AND c.hour = probe_hours.hour)
WHERE EXISTS (SELECT 1 FROM temp.recount c WHERE c.probe = probe_hours.probe AND c.hour = probe_hours.hour);

UPDATE results SET attempts = (SELECT c.new FROM temp.recount c WHERE c.operation_id = results.operation_id)
WHERE operation_id IN (SELECT operation_id FROM temp.recount);

DROP TABLE temp.recount;
