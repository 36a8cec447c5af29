// Monitoring: the statistics series (GET /api/timeseries) of the cluster or one node over a
// chosen range, as charts. Long ranges are bucketed (about 300 points a chart): message counts
// summed per bucket, gauges (sessions, subscriptions, retained) at their largest.

import {api} from '../api.js';
import {legend, lineChart} from '../chart.js';
import {clear, field, h} from '../dom.js';

const ranges = [
  {label: 'Last hour', ms: 3600_000},
  {label: 'Last 6 hours', ms: 6 * 3600_000},
  {label: 'Last 24 hours', ms: 24 * 3600_000},
  {label: 'Last 7 days', ms: 7 * 24 * 3600_000},
];

const charts = [
  {title: 'Messages per interval', agg: 'SUM', keys: [
    ['incomingMsgs', 'In'], ['outgoingMsgs', 'Out'], ['droppedMsgs', 'Dropped']]},
  {title: 'Sessions and subscriptions', agg: 'MAX', keys: [
    ['sessions', 'Connected sessions'], ['subscriptions', 'Subscriptions'], ['retainedMsgs', 'Retained messages']]},
];

async function series(entity, chart, rangeMs) {
  const endTs = Date.now();
  const startTs = endTs - rangeMs;
  const bucketed = rangeMs > 6 * 3600_000;
  const query = {keys: chart.keys.map(([k]) => k).join(','), startTs, endTs, orderBy: 'ASC', limit: 100000};
  if (bucketed) Object.assign(query, {agg: chart.agg, interval: Math.ceil(rangeMs / 300)});
  const data = await api('GET', `/api/timeseries/${encodeURIComponent(entity)}/values`, {query});
  return chart.keys.map(([key, label], i) => ({label, className: `series-${i}`, points: data[key] || []}));
}

export async function render(main) {
  const entity = h('select', {name: 'entity', 'aria-label': 'Node'}, h('option', {value: 'total'}, 'Whole cluster'));
  const range = h('select', {name: 'range', 'aria-label': 'Time range'},
    ranges.map((r, i) => h('option', {value: i}, r.label)));
  const body = h('div', {});
  try {
    const cluster = await api('GET', '/api/app/cluster-info');
    for (const n of cluster.nodes) entity.append(h('option', {value: n.nodeId}, n.nodeId));
  } catch {
    // the whole cluster's series still work
  }
  const load = async () => {
    const rangeMs = ranges[Number(range.value)].ms;
    const sections = await Promise.all(charts.map(async (chart) => {
      try {
        const s = await series(entity.value, chart, rangeMs);
        return h('section', {class: 'card'}, h('h2', {}, chart.title),
          lineChart(s, {title: chart.title}), legend(s));
      } catch (e) {
        return h('section', {class: 'card'}, h('h2', {}, chart.title), h('p', {class: 'error'}, e.message));
      }
    }));
    clear(body).append(...sections);
  };
  entity.addEventListener('change', load);
  range.addEventListener('change', load);
  main.append(h('h1', {}, 'Monitoring'),
    h('div', {class: 'toolbar'}, field('Node', entity), field('Range', range)), body);
  await load();
  const timer = setInterval(load, 60_000);
  return () => clearInterval(timer);
}
