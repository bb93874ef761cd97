-- Fencing (SPEC §12): which epoch of its location's lease each write was
-- made under, so that a write of a deposed leader can be told apart, and
-- which epoch's deliverer last claimed each alert of the outbox.
--
-- epoch 0 means the write claimed no lease: a single instance's, or a
-- handover's (the run of a node that no longer leads, stored as history
-- only).

-- results.epoch: the lease epoch the run was recorded under; handover:
-- stored as history only, by a node that no longer led.
ALTER TABLE results
    ADD COLUMN epoch    bigint  NOT NULL DEFAULT 0 CHECK (epoch >= 0),
    ADD COLUMN handover boolean NOT NULL DEFAULT false,
    ADD CHECK (NOT handover OR epoch = 0);

-- alert_state.epoch: the epoch of the run that last changed it.
ALTER TABLE alert_state
    ADD COLUMN epoch bigint NOT NULL DEFAULT 0 CHECK (epoch >= 0);

-- alerts.epoch: the epoch of the run that enqueued it; claimed_epoch: the
-- epoch whose deliverer last claimed it (NULL until a fenced deliverer
-- did).
ALTER TABLE alerts
    ADD COLUMN epoch         bigint NOT NULL DEFAULT 0 CHECK (epoch >= 0),
    ADD COLUMN claimed_epoch bigint CHECK (claimed_epoch >= 1);
