-- Checkpoint payloads are compressed with lz4 instead of pglz when they
-- go out of line (TOAST): a map's world checkpoint (about 32 KB, every
-- checkpoint interval) took Postgres a tenth of its CPU in pglz in the
-- 50-room soak (docs/benchmarks.md, "Density"). Rows written before keep
-- their pglz payloads, which Postgres still reads. A server built without
-- lz4 keeps pglz.

-- +goose Up
-- +goose StatementBegin
DO $$
BEGIN
    ALTER TABLE map_state ALTER COLUMN payload SET COMPRESSION lz4;
    ALTER TABLE character_state ALTER COLUMN payload SET COMPRESSION lz4;
EXCEPTION WHEN feature_not_supported THEN
    RAISE NOTICE 'this Postgres has no lz4: checkpoint payloads stay compressed with pglz';
END
$$;
-- +goose StatementEnd

-- +goose Down
ALTER TABLE character_state ALTER COLUMN payload SET COMPRESSION DEFAULT;
ALTER TABLE map_state ALTER COLUMN payload SET COMPRESSION DEFAULT;
