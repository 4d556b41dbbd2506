-- Equipment: a character's item is in its bag (slot '') or worn in a slot.
-- Equipping moves an item between the two, a critical action like a
-- pickup, so the slot lives with the owner in item_ownership.

-- +goose Up
ALTER TABLE item_ownership ADD COLUMN slot text NOT NULL DEFAULT '';
-- One item per slot per character: two equips racing into one slot
-- cannot both commit.
CREATE UNIQUE INDEX item_ownership_worn_idx ON item_ownership (owner_id, slot)
    WHERE owner_kind = 'character' AND slot <> '';

-- +goose Down
DROP INDEX item_ownership_worn_idx;
ALTER TABLE item_ownership DROP COLUMN slot;
