-- Critical-item recovery (DESIGN.md section 5): policies as the content
-- declares them, items that are destroyed (recovery brings critical ones
-- back), and one audit row per recovery, keyed by the decision's event id
-- so a recovery re-applied after a crash is recorded once.

-- +goose Up
ALTER TABLE item_ownership DROP CONSTRAINT item_ownership_owner_kind_check;
ALTER TABLE item_ownership ADD CONSTRAINT item_ownership_owner_kind_check
    CHECK (owner_kind IN ('character', 'map', 'destroyed'));

ALTER TABLE critical_item_policy
    ADD COLUMN quota integer NOT NULL DEFAULT 0 CHECK (quota >= 0),
    ADD CONSTRAINT critical_item_policy_cooldown_check CHECK (cooldown_ticks >= 0),
    ADD CONSTRAINT critical_item_policy_anchors_check CHECK (jsonb_typeof(anchors) = 'array');

ALTER TABLE item_recovery_audit
    ADD COLUMN event_id       text,
    ADD COLUMN kind           text   NOT NULL DEFAULT '',
    ADD COLUMN tick           bigint NOT NULL DEFAULT 0,
    ADD COLUMN map_instance   text   NOT NULL DEFAULT '',
    ADD COLUMN old_owner_kind text   NOT NULL DEFAULT '',
    ADD COLUMN old_owner_id   text   NOT NULL DEFAULT '',
    ADD COLUMN old_x          real   NOT NULL DEFAULT 0,
    ADD COLUMN old_y          real   NOT NULL DEFAULT 0,
    ADD COLUMN new_owner_kind text   NOT NULL DEFAULT '',
    ADD COLUMN new_owner_id   text   NOT NULL DEFAULT '',
    ADD COLUMN new_x          real   NOT NULL DEFAULT 0,
    ADD COLUMN new_y          real   NOT NULL DEFAULT 0;
CREATE UNIQUE INDEX item_recovery_audit_event_idx ON item_recovery_audit (event_id);

-- +goose Down
DROP INDEX item_recovery_audit_event_idx;
ALTER TABLE item_recovery_audit
    DROP COLUMN event_id, DROP COLUMN kind, DROP COLUMN tick, DROP COLUMN map_instance,
    DROP COLUMN old_owner_kind, DROP COLUMN old_owner_id, DROP COLUMN old_x, DROP COLUMN old_y,
    DROP COLUMN new_owner_kind, DROP COLUMN new_owner_id, DROP COLUMN new_x, DROP COLUMN new_y;
ALTER TABLE critical_item_policy
    DROP CONSTRAINT critical_item_policy_anchors_check, DROP CONSTRAINT critical_item_policy_cooldown_check,
    DROP COLUMN quota;
DELETE FROM item_ownership WHERE owner_kind = 'destroyed';
ALTER TABLE item_ownership DROP CONSTRAINT item_ownership_owner_kind_check;
ALTER TABLE item_ownership ADD CONSTRAINT item_ownership_owner_kind_check
    CHECK (owner_kind IN ('character', 'map'));
