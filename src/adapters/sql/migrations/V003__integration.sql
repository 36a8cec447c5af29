-- Integration Executor targets (HTTP, MQTT, KAFKA): TBMQ's `integration` table. Portable like
-- V001 (its rules apply): TBMQ's uuid id and varchar(n) columns are TEXT here; configuration
-- and additional_info are the JSON documents the API received, validated by the application.
-- disconnected_time and status are TBMQ's columns, kept for its data and unused for now.
CREATE TABLE integration (
    id TEXT NOT NULL PRIMARY KEY,
    created_time BIGINT NOT NULL,
    disconnected_time BIGINT,
    name TEXT,
    type TEXT NOT NULL,
    enabled BOOLEAN NOT NULL,
    status TEXT,
    configuration TEXT,
    additional_info TEXT
);
