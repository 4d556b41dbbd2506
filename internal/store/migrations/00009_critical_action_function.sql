-- A critical action in one statement (docs/design.md, "Density"): its
-- event and its moves, each move fenced by the acting map's lease, as one
-- call. A lone action then commits in one round trip, its own implicit
-- transaction, instead of four (BEGIN, the event, the move, COMMIT); on a
-- busy core every round trip waits for both processes to be scheduled
-- again. The steps are those the store ran as separate statements before.

-- +goose Up

-- roomkeeper_critical_action records the event unless its id is stored
-- already (then it returns false and moves nothing: the first run moved
-- them), and applies the moves in order, the i-th of each m_ array being
-- one move. It takes the character's transaction advisory lock of class
-- 1668442484 ("crit") first, so a character's events commit one at a time
-- and get their seq in commit order (internal/store/audit.go). A move
-- runs only while p_map_instance holds the character's lease with
-- p_epoch and the character is not in transfer, and holds that lease row
-- (FOR SHARE) until the commit. A move that matches nothing raises
-- RK001 when that lease is not held, else RK002 (the item is not where
-- the move says); a worn slot already taken raises unique_violation
-- (item_ownership_worn_idx). Either way the statement, and the
-- transaction it is in, changes nothing.
-- +goose StatementBegin
CREATE FUNCTION roomkeeper_critical_action(
    p_event_id text, p_character_id text, p_map_instance text, p_kind text, p_item_id text,
    p_tick bigint, p_payload bytea, p_moves jsonb, p_epoch bigint,
    m_item text[], m_kind text[], m_owner_kind text[], m_owner_id text[], m_x real[], m_y real[],
    m_from_kind text[], m_from_id text[], m_slot text[], m_from_slot text[])
RETURNS boolean LANGUAGE plpgsql AS $fn$
DECLARE
    moved bigint;
BEGIN
    IF p_character_id <> '' THEN
        PERFORM pg_advisory_xact_lock(1668442484, hashtext(p_character_id));
    END IF;
    INSERT INTO critical_events (event_id, character_id, map_instance, kind, item_id, tick, payload, moves)
    VALUES (p_event_id, p_character_id, p_map_instance, p_kind, p_item_id, p_tick, p_payload, p_moves)
    ON CONFLICT (event_id) DO NOTHING;
    GET DIAGNOSTICS moved = ROW_COUNT;
    IF moved = 0 THEN
        RETURN false;
    END IF;
    FOR i IN 1 .. coalesce(array_length(m_item, 1), 0) LOOP
        IF m_from_kind[i] = 'map' THEN
            -- An item never stored is still at its spawn on the map: the
            -- first move inserts its row.
            INSERT INTO item_ownership AS o (item_id, kind, owner_kind, owner_id, slot, x, y, revision, updated_at)
            SELECT m_item[i], m_kind[i], m_owner_kind[i], m_owner_id[i], m_slot[i], m_x[i], m_y[i], 1, now()
            WHERE EXISTS (SELECT 1 FROM character_authority
                WHERE character_id = p_character_id AND map_instance = p_map_instance AND epoch = p_epoch
                    AND NOT in_transfer FOR SHARE)
            ON CONFLICT (item_id) DO UPDATE
            SET kind = COALESCE(NULLIF(EXCLUDED.kind, ''), o.kind), owner_kind = EXCLUDED.owner_kind,
                owner_id = EXCLUDED.owner_id, slot = EXCLUDED.slot, x = EXCLUDED.x, y = EXCLUDED.y,
                revision = o.revision + 1, updated_at = now()
            WHERE o.owner_kind = m_from_kind[i] AND o.owner_id = m_from_id[i] AND o.slot = m_from_slot[i];
        ELSE
            -- Under READ COMMITTED a concurrent move re-evaluates the WHERE
            -- on the new row version, so it too matches at most once.
            UPDATE item_ownership
            SET kind = COALESCE(NULLIF(m_kind[i], ''), kind), owner_kind = m_owner_kind[i],
                owner_id = m_owner_id[i], slot = m_slot[i], x = m_x[i], y = m_y[i],
                revision = revision + 1, updated_at = now()
            WHERE item_id = m_item[i] AND owner_kind = m_from_kind[i] AND owner_id = m_from_id[i]
                AND slot = m_from_slot[i]
                AND EXISTS (SELECT 1 FROM character_authority
                    WHERE character_id = p_character_id AND map_instance = p_map_instance AND epoch = p_epoch
                        AND NOT in_transfer FOR SHARE);
        END IF;
        GET DIAGNOSTICS moved = ROW_COUNT;
        IF moved = 0 THEN
            PERFORM 1 FROM character_authority
            WHERE character_id = p_character_id AND map_instance = p_map_instance AND epoch = p_epoch
                AND NOT in_transfer FOR SHARE;
            IF NOT FOUND THEN
                RAISE EXCEPTION 'character % is not held by % with epoch %', p_character_id, p_map_instance, p_epoch
                    USING ERRCODE = 'RK001';
            END IF;
            RAISE EXCEPTION 'item % is not at % %', m_item[i], m_from_kind[i], m_from_id[i]
                USING ERRCODE = 'RK002';
        END IF;
    END LOOP;
    RETURN true;
END
$fn$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION roomkeeper_critical_action(text, text, text, text, text, bigint, bytea, jsonb, bigint,
    text[], text[], text[], text[], real[], real[], text[], text[], text[], text[]);
