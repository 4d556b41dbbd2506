-- Map transfers (DESIGN.md section 3.5): one row per portal crossing, its
-- state machine, and the lease of a character in transfer naming the
-- transfer it belongs to.

-- +goose Up

-- A transfer moves a character from one map instance to another. state
-- only moves forward along requested -> token_issued ->
-- destination_accepted -> source_released -> completed, or ends aborted;
-- every step is one guarded UPDATE, so a retry or a race changes nothing.
-- from_x, from_y are where the character stood on the source map: an
-- aborted transfer puts it back there.
CREATE TABLE transfers (
    id            text        PRIMARY KEY,
    character_id  text        NOT NULL REFERENCES characters (id) ON DELETE CASCADE,
    from_instance text        NOT NULL,
    to_instance   text        NOT NULL,
    to_map        text        NOT NULL,
    state         text        NOT NULL CHECK (state IN ('requested', 'token_issued',
                      'destination_accepted', 'source_released', 'completed', 'aborted')),
    from_x        real        NOT NULL DEFAULT 0,
    from_y        real        NOT NULL DEFAULT 0,
    expires_at    timestamptz NOT NULL,
    reason        text        NOT NULL DEFAULT '',
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX transfers_character_idx ON transfers (character_id, created_at);
-- The source's sweep finds its own unsettled transfers.
CREATE INDEX transfers_pending_idx ON transfers (from_instance, expires_at)
    WHERE state IN ('requested', 'token_issued');

-- A lease in transfer is bound to its destination (map_instance) and to
-- the transfer: only that destination, with that transfer, may claim it
-- before it expires.
ALTER TABLE character_authority ADD COLUMN transfer_id text;

-- +goose Down
ALTER TABLE character_authority DROP COLUMN transfer_id;
DROP TABLE transfers;
