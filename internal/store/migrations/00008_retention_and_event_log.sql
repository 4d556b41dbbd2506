-- Operating the data (docs/operations.md, "Data retention"): what the
-- manager prunes needs an index on time, the map's combat and world events
-- get a log of their own, and a character's checkpoints are kept
-- append-only for a window, each with the items the character held, so
-- `roomctl audit replay` can re-derive one checkpoint's items from the one
-- before and the critical events between them.

-- +goose Up

-- BRIN indexes: these tables are appended to in time order, so a few
-- pages of summary find the old rows for the pruner, and an insert costs
-- next to nothing (no btree to write on the hot path of a critical action).
CREATE INDEX transfers_created_brin ON transfers USING brin (created_at);
CREATE INDEX critical_events_created_brin ON critical_events USING brin (created_at);
CREATE INDEX item_recovery_audit_decided_brin ON item_recovery_audit USING brin (decided_at);

-- What each critical event moved: [{item, fromKind, fromId, fromSlot,
-- toKind, toId, toSlot}], so a replay needs no knowledge of the kinds
-- (NULL for events from before).
ALTER TABLE critical_events ADD COLUMN moves jsonb;

-- The event log: every event of every map (joins, leaves, hits, deaths,
-- loot taken and dropped, doors, rooms cleared, boss phases, transfers),
-- written in batches by the map's pod, off its tick. Partitioned by the
-- hour of at: the pruner drops whole partitions older than the retention
-- (no row deletes, no vacuum debt), and creates the next hours' ahead; a
-- pod that finds its hour missing creates it. entity and by are the
-- map's entity ids; character and by_character name the players among
-- them.
CREATE TABLE event_log (
    at           timestamptz NOT NULL,
    map_instance text        NOT NULL,
    tick         bigint      NOT NULL,
    seq          bigint      NOT NULL, -- the event's place in its map's log: only grows, across pods
    event_id     bigint      NOT NULL DEFAULT 0, -- the protocol's event id; 0 for events clients do not get
    type         text        NOT NULL,
    entity       bigint      NOT NULL DEFAULT 0,
    character    text        NOT NULL DEFAULT '',
    by_entity    bigint      NOT NULL DEFAULT 0,
    by_character text        NOT NULL DEFAULT '',
    item_id      text        NOT NULL DEFAULT '',
    amount       integer     NOT NULL DEFAULT 0, -- a hit's damage, a boss's phase, a cleared room's id
    x            real        NOT NULL DEFAULT 0,
    y            real        NOT NULL DEFAULT 0,
    detail       text        NOT NULL DEFAULT ''
) PARTITION BY RANGE (at);

-- checkpoint_history becomes append-only: one row per checkpoint written,
-- kept for the retention window (the pruner deletes older rows), with the
-- items the character held when it was written (items: "id" in the bag,
-- "id@slot" worn, sorted; NULL for rows from before this migration) and
-- events_seq, the newest of the character's critical events that
-- checkpoint's transaction saw.
ALTER TABLE checkpoint_history RENAME TO checkpoint_history_ring;
CREATE TABLE checkpoint_history (
    id           bigserial   PRIMARY KEY,
    character_id text        NOT NULL REFERENCES characters (id) ON DELETE CASCADE,
    revision     bigint      NOT NULL,
    saved_tick   bigint      NOT NULL,
    state_hash   text        NOT NULL,
    map_instance text        NOT NULL,
    at           timestamptz NOT NULL,
    items        text[],
    events_seq   bigint      NOT NULL DEFAULT 0
);
CREATE INDEX checkpoint_history_character_idx ON checkpoint_history (character_id, id);
CREATE INDEX checkpoint_history_at_brin ON checkpoint_history USING brin (at);
INSERT INTO checkpoint_history (character_id, revision, saved_tick, state_hash, map_instance, at)
SELECT character_id, revision, saved_tick, state_hash, map_instance, at
FROM checkpoint_history_ring ORDER BY at, character_id, revision;
DROP TABLE checkpoint_history_ring;

-- What platform operators did through the manager's admin API
-- (docs/operations.md, "Moderation"): who (the Kubernetes user), what, to
-- whom, and the answer. Append-only; kept like critical events.
CREATE TABLE admin_actions (
    id      bigserial   PRIMARY KEY,
    at      timestamptz NOT NULL DEFAULT now(),
    actor   text        NOT NULL,
    action  text        NOT NULL,
    target  text        NOT NULL DEFAULT '',
    detail  jsonb       NOT NULL DEFAULT '{}'
);
CREATE INDEX admin_actions_at_brin ON admin_actions USING brin (at);

-- Users banned from the room's maps until a time: the join API refuses
-- them tickets and the maps refuse and end their sessions.
CREATE TABLE bans (
    user_id    text        PRIMARY KEY,
    until      timestamptz NOT NULL,
    reason     text        NOT NULL DEFAULT '',
    banned_by  text        NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE bans;
DROP TABLE admin_actions;
ALTER TABLE checkpoint_history RENAME TO checkpoint_history_log;
CREATE TABLE checkpoint_history (
    character_id text        NOT NULL REFERENCES characters (id) ON DELETE CASCADE,
    slot         integer     NOT NULL,
    revision     bigint      NOT NULL,
    saved_tick   bigint      NOT NULL,
    state_hash   text        NOT NULL,
    map_instance text        NOT NULL,
    at           timestamptz NOT NULL,
    PRIMARY KEY (character_id, slot)
) WITH (fillfactor = 50);
INSERT INTO checkpoint_history (character_id, slot, revision, saved_tick, state_hash, map_instance, at)
SELECT DISTINCT ON (character_id, revision % 16) character_id, (revision % 16)::integer,
    revision, saved_tick, state_hash, map_instance, at
FROM checkpoint_history_log ORDER BY character_id, revision % 16, revision DESC;
DROP TABLE checkpoint_history_log;
DROP TABLE event_log;
ALTER TABLE critical_events DROP COLUMN moves;
DROP INDEX item_recovery_audit_decided_brin;
DROP INDEX critical_events_created_brin;
DROP INDEX transfers_created_brin;
