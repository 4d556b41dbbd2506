-- Durable world state (docs/design.md section 6): map_state holds each map
-- instance's world checkpoint, versioned and hashed like a character's
-- state, and fenced: every pod that takes a map's world claims a new
-- epoch, and only the newest epoch's pod writes it. released says the
-- writer let the world go (it handed its map over, or stopped), so the
-- pod taking over knows the last checkpoint is final.

-- +goose Up
ALTER TABLE map_state
    ADD COLUMN schema_version   integer NOT NULL DEFAULT 0,
    ADD COLUMN sim_core_version text    NOT NULL DEFAULT '',
    ADD COLUMN saved_tick       bigint  NOT NULL DEFAULT 0,
    ADD COLUMN state_hash       text    NOT NULL DEFAULT '',
    ADD COLUMN epoch            bigint  NOT NULL DEFAULT 0,
    ADD COLUMN pod              text    NOT NULL DEFAULT '',
    ADD COLUMN released         boolean NOT NULL DEFAULT false;

-- +goose Down
ALTER TABLE map_state
    DROP COLUMN released,
    DROP COLUMN pod,
    DROP COLUMN epoch,
    DROP COLUMN state_hash,
    DROP COLUMN saved_tick,
    DROP COLUMN sim_core_version,
    DROP COLUMN schema_version;
