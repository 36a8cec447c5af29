"""Two logins in starlingd's YAML credentials (security.mqtt.credentials), for tests that need
a client of each type: the client type comes from the credentials, so a persistent APPLICATION
session needs the APPLICATION login. Anonymous access is turned off with them, so every client
of such a broker must log in with one of the two."""

from __future__ import annotations

from starling_it.brokers import REPO_ROOT

APPLICATION = {"username": "app", "password": "app-pw"}
DEVICE = {"username": "dev", "password": "dev-pw"}

_YAML = """\
    credentials:
      - name: application
        type: APPLICATION
        credentials-type: MQTT_BASIC
        username: app
        password: app-pw
      - name: device
        credentials-type: MQTT_BASIC
        username: dev
        password: dev-pw
"""


def config_text() -> str:
    """config/starling.yml with the two credentials in place of the empty list."""
    text = (REPO_ROOT / "config" / "starling.yml").read_text()
    assert "    credentials: []\n" in text, "config/starling.yml no longer has `credentials: []`"
    return text.replace("    credentials: []\n", _YAML)


def env(**extra: str) -> dict[str, str]:
    """The broker environment that goes with config_text(): anonymous access off."""
    return {"SECURITY_MQTT_ALLOW_ANONYMOUS": "false", **extra}
