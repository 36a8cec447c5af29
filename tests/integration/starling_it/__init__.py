"""Helpers for Starling's integration tests: broker processes, MQTT clients, packet codec."""
