-- The recent checkpoints of each character (DESIGN.md section 6,
-- "checkpoint_audit (recent window)"): checkpoint_audit counts batches,
-- checkpoint_history says which revision of a character was written, at
-- which tick, with which hash, by which map and when, so an operator can
-- compare a character's last states across maps and pods.

-- +goose Up

-- A ring of checkpointHistoryWindow (16, internal/store/states.go) rows per
-- character: revision R is kept in slot R mod 16, and the statement that
-- writes character_state upserts it there, over revision R - 16. So the
-- table is bounded by its key, nothing is ever deleted to keep it so, and
-- in steady state every checkpoint is an update that changes no indexed
-- column: a HOT update (the new version on the same page, which these
-- half-empty pages leave room for), with no index write and no dead index
-- entry for vacuum. Only states actually written get a row
-- (stale and fenced ones none), so the newest row equals
-- character_state's revision, saved_tick and state_hash, and its at
-- equals updated_at (after a restore that set character_state back, the
-- rows above its revision are from before, until overwritten). When
-- revisions were skipped (records merged while a batch waited), the slots
-- they would have used still hold older ones.
-- Changing the window needs a migration that renumbers or deletes the
-- slots. Deleting a character deletes its history.
CREATE TABLE checkpoint_history (
    character_id text        NOT NULL REFERENCES characters (id) ON DELETE CASCADE,
    slot         integer     NOT NULL, -- revision mod the window
    revision     bigint      NOT NULL,
    saved_tick   bigint      NOT NULL,
    state_hash   text        NOT NULL, -- hex SHA-256 of the payload written
    map_instance text        NOT NULL, -- the map that wrote it
    at           timestamptz NOT NULL, -- the writing transaction's time
    PRIMARY KEY (character_id, slot)
) WITH (fillfactor = 50);

-- +goose Down
DROP TABLE checkpoint_history;
