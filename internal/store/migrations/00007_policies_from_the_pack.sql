-- Critical-item policies have one source, the content pack (docs/content.md):
-- a map's pod reads them from its pack, and deleting a character releases
-- the kinds its room's packs call critical (the join API passes them). The
-- table the pods copied their packs into, which nothing else could keep
-- true, goes.

-- +goose Up
DROP TABLE critical_item_policy;

-- +goose Down
CREATE TABLE critical_item_policy (
    item_kind      text     PRIMARY KEY,
    policy         text     NOT NULL
        CHECK (policy IN ('unique_persistent', 'regenerative_unique', 'instance_quota')),
    anchors        jsonb    NOT NULL DEFAULT '[]'
        CONSTRAINT critical_item_policy_anchors_check CHECK (jsonb_typeof(anchors) = 'array'),
    cooldown_ticks bigint   NOT NULL DEFAULT 0
        CONSTRAINT critical_item_policy_cooldown_check CHECK (cooldown_ticks >= 0),
    quest_gate     text,
    offline_grace  interval NOT NULL DEFAULT '0',
    quota          integer  NOT NULL DEFAULT 0 CHECK (quota >= 0)
);
