#!/usr/bin/env python3
"""Writes Starling's Grafana dashboard, k8s/helm/starling/files/grafana-dashboard.json.

The dashboard is generated so its layout stays regular (every panel on a 24-column grid, rows
of equal height) and each query is written once here. Edit this file, then run

    python3 monitoring/grafana/make_dashboard.py

and commit both. scripts/validate-deploy.sh checks that the JSON is this script's output, that
every query parses (promtool) and that every metric it reads is in docs/metrics.md.

Variables: datasource (any Prometheus), job and instance (multi-select, "All" by default).
Every metric is described in docs/metrics.md.
"""
import json
import os
import sys

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "k8s", "helm",
                   "starling", "files", "grafana-dashboard.json")

SEL = 'job=~"$job", instance=~"$instance"'
DS = {"type": "prometheus", "uid": "${datasource}"}


class Layout:
    """Places panels left to right on Grafana's 24-column grid, wrapping to new rows."""

    def __init__(self):
        self.panels = []
        self.x = 0
        self.y = 0
        self.row_height = 0
        self.next_id = 1

    def _id(self):
        self.next_id += 1
        return self.next_id - 1

    def row(self, title):
        if self.x:
            self.y += self.row_height
            self.x = self.row_height = 0
        self.panels.append({"type": "row", "id": self._id(), "title": title, "collapsed": False,
                            "gridPos": {"h": 1, "w": 24, "x": 0, "y": self.y}, "panels": []})
        self.y += 1

    def add(self, panel, w, h):
        if self.x + w > 24:
            self.y += self.row_height
            self.x = self.row_height = 0
        panel["id"] = self._id()
        panel["gridPos"] = {"h": h, "w": w, "x": self.x, "y": self.y}
        panel["datasource"] = DS
        self.panels.append(panel)
        self.x += w
        self.row_height = max(self.row_height, h)


def targets(*queries):
    """(expr, legend) pairs -> Grafana targets, refIds A, B, ..."""
    return [{"datasource": DS, "expr": expr, "legendFormat": legend, "refId": chr(65 + i),
             "range": True} for i, (expr, legend) in enumerate(queries)]


def stat(title, expr, unit="short", description=""):
    return {"type": "stat", "title": title, "description": description,
            "targets": targets((expr, "")),
            "fieldConfig": {"defaults": {"unit": unit, "color": {"mode": "thresholds"},
                                         "thresholds": {"mode": "absolute", "steps": [
                                             {"color": "green", "value": None}]}},
                            "overrides": []},
            "options": {"reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False},
                        "colorMode": "value", "graphMode": "area", "justifyMode": "auto",
                        "orientation": "auto", "textMode": "auto"}}


def graph(title, *queries, unit="short", description="", stack=False):
    custom = {"drawStyle": "line", "lineWidth": 1, "fillOpacity": 10, "showPoints": "never",
              "spanNulls": False}
    if stack:
        custom["stacking"] = {"mode": "normal", "group": "A"}
    return {"type": "timeseries", "title": title, "description": description,
            "targets": targets(*queries),
            "fieldConfig": {"defaults": {"unit": unit, "custom": custom}, "overrides": []},
            "options": {"legend": {"displayMode": "list", "placement": "bottom",
                                   "showLegend": True},
                        "tooltip": {"mode": "multi", "sort": "desc"}}}


def rate(metric, by="instance", extra=""):
    sel = SEL + (", " + extra if extra else "")
    return f"sum by ({by}) (rate({metric}{{{sel}}}[$__rate_interval]))"


def quantile(q, metric, by="instance"):
    return (f"histogram_quantile({q}, sum by ({by}, le) "
            f"(rate({metric}_bucket{{{SEL}}}[$__rate_interval])))")


def build():
    d = Layout()
    d.row("Cluster at a glance")
    d.add(stat("Nodes up", f'count(up{{{SEL}}} == 1)'), 3, 4)
    d.add(stat("Nodes not ready", f'count(healthStatus{{{SEL}, component="overall"}} >= 2) or vector(0)',
               description="Readiness OUT_OF_SERVICE or DOWN (starting, stopping, a store "
                           "unreachable)."), 3, 4)
    d.add(stat("Connected sessions", f"sum(connectedSessions{{{SEL}}})"), 3, 4)
    d.add(stat("Subscriptions", f"max(clientSubscriptions{{{SEL}}})"), 3, 4)
    d.add(stat("Retained messages", f"max(retainedMessages{{{SEL}}})"), 3, 4)
    d.add(stat("Incoming msg/s", f"sum(rate(incomingPublishMsgs_total{{{SEL}}}[$__rate_interval]))",
               "reqps"), 3, 4)
    d.add(stat("Outgoing msg/s", f"sum(rate(outgoingPublishMsgs_total{{{SEL}}}[$__rate_interval]))",
               "reqps"), 3, 4)
    d.add(stat("Dropped msg/s", f"sum(rate(droppedMsgs_total{{{SEL}}}[$__rate_interval]))",
               "reqps"), 3, 4)

    d.row("Messages")
    d.add(graph("Incoming PUBLISH by QoS", (rate("incomingPublishMsgs_total", "qos"), "QoS {{qos}}"),
                unit="reqps", stack=True), 8, 8)
    d.add(graph("Outgoing PUBLISH by QoS", (rate("outgoingPublishMsgs_total", "qos"), "QoS {{qos}}"),
                unit="reqps", stack=True), 8, 8)
    d.add(graph("Dropped copies by reason", (rate("droppedMsgs_total", "reason"), "{{reason}}"),
                unit="reqps", stack=True,
                description="docs/metrics.md lists the reasons; GET /api/drops names the clients "
                            "and topics."), 8, 8)
    d.add(graph("Routed and forwarded copies", (rate("routedMsgs_total"), "routed {{instance}}"),
                (rate("forwardedMsgs_total"), "forwarded {{instance}}"), unit="reqps"), 12, 8)
    d.add(graph("Sessions and subscriptions", (f"connectedSessions{{{SEL}}}", "connected {{instance}}"),
                (f"max(allClientSessions{{{SEL}}})", "all sessions"),
                (f"max(clientSubscriptions{{{SEL}}})", "subscriptions")), 12, 8)

    d.row("Latency")
    d.add(graph("Message log acknowledgement (floor of PUBACK)",
                (quantile(0.5, "messageLog_produceAckLatency_seconds"), "p50 {{instance}}"),
                (quantile(0.99, "messageLog_produceAckLatency_seconds"), "p99 {{instance}}"),
                unit="s"), 8, 8)
    d.add(graph("Subscription trie lookup",
                (quantile(0.99, "subscriptionLookup_seconds"), "p99 {{instance}}"), unit="s"), 8, 8)
    d.add(graph("Authentication",
                (quantile(0.99, "authLatency_seconds"), "p99 {{instance}}"), unit="s"), 8, 8)

    d.row("Connections and authentication")
    d.add(graph("Listener sockets", (f"sum by (listener) (listenerConnections{{{SEL}}})",
                                     "{{listener}}")), 8, 8)
    d.add(graph("Connections refused at accept",
                (rate("connectionsRefused_total", "listener, reason"), "{{listener}} {{reason}}"),
                (rate("httpConnectionsRefused_total", "server, reason"), "{{server}} {{reason}}"),
                unit="reqps"), 8, 8)
    d.add(graph("Handshake failures and CONNECT timeouts",
                (rate("handshakeFailures_total", "listener, reason"), "{{listener}} {{reason}}"),
                (rate("connectTimeouts_total", "listener, phase"), "timeout {{listener}} {{phase}}"),
                unit="reqps"), 8, 8)
    d.add(graph("Disconnects by reason",
                (rate("clientDisconnects_total", "reason"), "{{reason}}"), unit="reqps"), 24, 8)
    d.add(graph("Authentication results",
                (rate("authSuccess_total", "provider"), "ok {{provider}}"),
                (rate("authFailures_total", "provider, reason"), "failed {{provider}} {{reason}}"),
                unit="reqps"), 12, 8)
    d.add(graph("Authentication providers",
                (rate("authProviderTimeouts_total", "provider"), "timeouts {{provider}}"),
                (rate("authProviderSkipped_total", "provider"), "skipped {{provider}}"),
                (rate("authProviderShed_total", "provider"), "shed {{provider}}"),
                unit="reqps"), 12, 8)

    d.row("Backpressure and limits")
    d.add(graph("Slow subscribers", (f"nonWritableClients{{{SEL}}}", "{{instance}}")), 6, 8)
    d.add(graph("Actor mailboxes", (f"actorMailboxDepth{{{SEL}}}", "depth {{instance}}"),
                (rate("actorMailboxRejected_total"), "rejected/s {{instance}}")), 6, 8)
    d.add(graph("Throughput quota",
                (rate("throughputQuotaCharged_total"), "charged/s {{instance}}"),
                (rate("throughputQuotaRefused_total"), "refused/s {{instance}}"),
                (f"max(throughputQuotaReached{{{SEL}}})", "reached")), 6, 8)
    d.add(graph("Refusals by limit",
                (rate("sessionLimitRefusals_total", "limit"), "sessions limit {{limit}}"),
                (rate("subscriptionsRefused_total"), "subscriptions {{instance}}"),
                (rate("retainedMsgsRefused_total"), "retained {{instance}}"),
                unit="reqps"), 6, 8)

    d.row("Stores and health")
    d.add(graph("Health by component (0 UP, 1 DEGRADED, 2 OUT_OF_SERVICE, 3 DOWN)",
                (f"healthStatus{{{SEL}}}", "{{instance}} {{component}}")), 8, 8)
    d.add(graph("Message log errors",
                (rate("messageLog_produceFailed_total"), "produce failed {{instance}}"),
                (rate("messageLog_writeErrors_total"), "write errors {{instance}}"),
                (rate("messageLog_diskRefusals_total"), "disk refusals {{instance}}"),
                (rate("rateLimitStoreErrors_total"), "Redis limit errors {{instance}}"),
                (rate("clusterSessionRequestTimeouts_total"), "session timeouts {{instance}}"),
                unit="reqps"), 8, 8)
    d.add(graph("Embedded disk free", (f"messageLog_diskFreeBytes{{{SEL}}}", "{{instance}}"),
                unit="bytes"), 8, 8)

    d.row("Process")
    d.add(graph("CPU", (rate("process_cpu_seconds_total"), "{{instance}}"), unit="percentunit"), 6, 8)
    d.add(graph("Memory", (f"process_resident_memory_bytes{{{SEL}}}", "resident {{instance}}"),
                (f"memoryLimit_bytes{{{SEL}}} > 0", "limit {{instance}}"), unit="bytes"), 6, 8)
    d.add(graph("File descriptors", (f"process_open_fds{{{SEL}}}", "open {{instance}}"),
                (f"process_max_fds{{{SEL}}}", "max {{instance}}")), 6, 8)
    d.add(graph("Certificate expiry",
                (f"tlsCertificateExpiry_seconds{{{SEL}}} - time()", "{{instance}} {{listener}}"),
                unit="s"), 6, 8)
    d.add(stat("Uptime", f"min(time() - process_start_time_seconds{{{SEL}}})", "s"), 6, 4)
    d.add(stat("Version", f'count by (version) (build_info{{{SEL}}})',
               description="Nodes per Starling version (a rolling upgrade shows two)."), 6, 4)
    d.add(stat("Internal bugs reported", f"sum(bugsReported_total{{{SEL}}})",
               description="Should stay 0: send the log lines to the developers."), 6, 4)
    d.add(stat("Running actors", f"sum(runningActors{{{SEL}}})"), 6, 4)
    # The Version panel shows the label, not the count.
    d.panels[-3]["options"]["textMode"] = "name"
    d.panels[-3]["targets"][0]["legendFormat"] = "{{version}}"

    def variable(name, label, query):
        return {"name": name, "label": label, "type": "query", "datasource": DS,
                "query": {"query": query, "refId": name}, "definition": query, "refresh": 2,
                "multi": True, "includeAll": True, "allValue": ".*",
                "current": {"selected": True, "text": ["All"], "value": ["$__all"]},
                "sort": 1, "options": [], "hide": 0}

    return {
        "title": "Starling",
        "uid": "starling-broker",
        "description": "Starling MQTT broker: sessions, message rates, drops, latency, stores "
                       "and process (docs/metrics.md).",
        "tags": ["starling", "mqtt"],
        "editable": True,
        "graphTooltip": 1,
        "refresh": "30s",
        "schemaVersion": 39,
        "version": 1,
        "time": {"from": "now-3h", "to": "now"},
        "timepicker": {},
        "timezone": "browser",
        "fiscalYearStartMonth": 0,
        "liveNow": False,
        "annotations": {"list": []},
        "links": [],
        "templating": {"list": [
            {"name": "datasource", "label": "Prometheus", "type": "datasource",
             "query": "prometheus", "current": {}, "hide": 0, "options": [], "refresh": 1,
             "regex": ""},
            variable("job", "Job", "label_values(connectedSessions, job)"),
            variable("instance", "Node", 'label_values(connectedSessions{job=~"$job"}, instance)'),
        ]},
        "panels": d.panels,
    }


def main():
    text = json.dumps(build(), indent=2, ensure_ascii=False) + "\n"
    if "--check" in sys.argv:
        current = open(OUT).read() if os.path.exists(OUT) else ""
        if current != text:
            print(f"{os.path.relpath(OUT)} is not make_dashboard.py's output: run "
                  "python3 monitoring/grafana/make_dashboard.py")
            sys.exit(1)
        print("dashboard JSON is up to date")
        return
    with open(OUT, "w") as f:
        f.write(text)
    print(f"wrote {os.path.relpath(OUT)}")


if __name__ == "__main__":
    main()
