-- /api/timeseries reads ts_kv by key and time range for every node at once, and the
-- retention sweep deletes by time alone; the primary key (entity_id, key, ts) serves neither.
CREATE INDEX idx_ts_kv_key_ts ON ts_kv (key, ts);
CREATE INDEX idx_ts_kv_ts ON ts_kv (ts);
