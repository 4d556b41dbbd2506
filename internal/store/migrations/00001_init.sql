-- The room server's schema (DESIGN.md section 6). Applied by store.Migrate
-- under a Postgres advisory lock, so pods starting together are safe.

-- +goose Up

-- A character belongs to exactly one user; a user has several and at most
-- one active (the one a join without characterId uses).
CREATE TABLE characters (
    id         text        PRIMARY KEY,
    user_id    text        NOT NULL,
    name       text        NOT NULL DEFAULT '',
    active     boolean     NOT NULL DEFAULT false,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX characters_user_idx ON characters (user_id);
CREATE UNIQUE INDEX characters_one_active_idx ON characters (user_id) WHERE active;

-- The latest snapshot of each character. revision only grows: a checkpoint
-- with an older or equal revision is skipped, so retries are idempotent.
-- Every checkpoint rewrites its rows: half-empty pages let those updates be
-- HOT (no index write, pruned in place).
CREATE TABLE character_state (
    character_id     text        PRIMARY KEY REFERENCES characters (id) ON DELETE CASCADE,
    schema_version   integer     NOT NULL,
    sim_core_version text        NOT NULL,
    revision         bigint      NOT NULL,
    saved_tick       bigint      NOT NULL,
    payload          bytea       NOT NULL,
    state_hash       text        NOT NULL, -- hex SHA-256 of payload, checked on load
    updated_at       timestamptz NOT NULL DEFAULT now()
) WITH (fillfactor = 50);

-- Authority: a character is simulated in at most one map. epoch grows with
-- every claim (from a sequence, so it never repeats even after a release),
-- and renewals and releases only match the epoch they were given.
CREATE SEQUENCE character_authority_epoch_seq;
CREATE TABLE character_authority (
    character_id text        PRIMARY KEY REFERENCES characters (id) ON DELETE CASCADE,
    map_instance text        NOT NULL,
    pod          text        NOT NULL,
    epoch        bigint      NOT NULL,
    expires_at   timestamptz NOT NULL,
    in_transfer  boolean     NOT NULL DEFAULT false
);
CREATE INDEX character_authority_map_idx ON character_authority (map_instance);

-- One-time ticket ids, kept until they expire (plus the guard's grace).
CREATE TABLE consumed_tokens (
    jti        text        PRIMARY KEY,
    expires_at timestamptz NOT NULL
);
CREATE INDEX consumed_tokens_expires_idx ON consumed_tokens (expires_at);

-- Acknowledged critical actions, append-only. event_id is the idempotency
-- key; seq orders a character's history.
CREATE TABLE critical_events (
    event_id     text        PRIMARY KEY,
    seq          bigserial   NOT NULL UNIQUE,
    character_id text        NOT NULL,
    map_instance text        NOT NULL,
    kind         text        NOT NULL,
    item_id      text        NOT NULL DEFAULT '',
    tick         bigint      NOT NULL,
    payload      bytea,
    created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX critical_events_character_idx ON critical_events (character_id, seq);

-- Where each item is. An item never stored is still at its generated spawn
-- on its map; the first critical move inserts its row.
CREATE TABLE item_ownership (
    item_id    text        PRIMARY KEY,
    kind       text        NOT NULL,
    owner_kind text        NOT NULL CHECK (owner_kind IN ('character', 'map')),
    owner_id   text        NOT NULL,
    x          real        NOT NULL DEFAULT 0,
    y          real        NOT NULL DEFAULT 0,
    revision   bigint      NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX item_ownership_owner_idx ON item_ownership (owner_kind, owner_id);

-- How each critical item kind is kept in the world.
CREATE TABLE critical_item_policy (
    item_kind      text     PRIMARY KEY,
    policy         text     NOT NULL
        CHECK (policy IN ('unique_persistent', 'regenerative_unique', 'instance_quota')),
    anchors        jsonb    NOT NULL DEFAULT '[]',
    cooldown_ticks bigint   NOT NULL DEFAULT 0,
    quest_gate     text,
    offline_grace  interval NOT NULL DEFAULT '0'
);

-- Every decision to recover (respawn, return, reassign) a critical item.
CREATE TABLE item_recovery_audit (
    id         bigserial   PRIMARY KEY,
    item_id    text        NOT NULL,
    reason     text        NOT NULL,
    decided_at timestamptz NOT NULL DEFAULT now(),
    details    jsonb       NOT NULL DEFAULT '{}'
);
CREATE INDEX item_recovery_audit_item_idx ON item_recovery_audit (item_id, decided_at);

-- One row per checkpoint batch, for the last 24 hours (older rows are
-- pruned by the insert that follows them).
CREATE TABLE checkpoint_audit (
    id           bigserial        PRIMARY KEY,
    map_instance text             NOT NULL,
    saved        integer          NOT NULL,
    stale        integer          NOT NULL,
    duration_ms  double precision NOT NULL,
    at           timestamptz      NOT NULL DEFAULT now()
);
CREATE INDEX checkpoint_audit_at_idx ON checkpoint_audit (at);

-- World state of a map instance that outlives its pod.
CREATE TABLE map_state (
    map_instance text        PRIMARY KEY,
    revision     bigint      NOT NULL,
    payload      bytea       NOT NULL,
    updated_at   timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE map_state;
DROP TABLE checkpoint_audit;
DROP TABLE item_recovery_audit;
DROP TABLE critical_item_policy;
DROP TABLE item_ownership;
DROP TABLE critical_events;
DROP TABLE consumed_tokens;
DROP TABLE character_authority;
DROP SEQUENCE character_authority_epoch_seq;
DROP TABLE character_state;
DROP TABLE characters;
