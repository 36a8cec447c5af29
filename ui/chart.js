// A line chart in SVG, with no library: series of {ts, value} points over a shared time axis.
// Small on purpose: the console needs trends (rates over hours), not an analytics tool.

const ns = 'http://www.w3.org/2000/svg';

function svg(tag, attrs) {
  const el = document.createElementNS(ns, tag);
  for (const [key, value] of Object.entries(attrs)) el.setAttribute(key, String(value));
  return el;
}

// series: [{label, points: [{ts, value}], className}] (points in any order).
export function lineChart(series, {width = 640, height = 180, title = ''} = {}) {
  const pad = {left: 48, right: 8, top: 8, bottom: 22};
  const all = series.flatMap((s) => s.points);
  const root = svg('svg', {viewBox: `0 0 ${width} ${height}`, class: 'chart', role: 'img',
    'aria-label': title});
  if (!all.length) {
    const text = svg('text', {x: width / 2, y: height / 2, 'text-anchor': 'middle', class: 'axis'});
    text.textContent = 'No samples in this range yet.';
    root.append(text);
    return root;
  }
  const t0 = Math.min(...all.map((p) => p.ts));
  const t1 = Math.max(...all.map((p) => p.ts), t0 + 1);
  const top = Math.max(1, ...all.map((p) => p.value));
  const x = (ts) => pad.left + ((ts - t0) / (t1 - t0)) * (width - pad.left - pad.right);
  const y = (v) => height - pad.bottom - (v / top) * (height - pad.top - pad.bottom);
  for (const fraction of [0, 0.5, 1]) {
    const value = top * fraction;
    root.append(svg('line', {x1: pad.left, x2: width - pad.right, y1: y(value), y2: y(value),
      class: 'grid'}));
    const label = svg('text', {x: pad.left - 4, y: y(value) + 4, 'text-anchor': 'end', class: 'axis'});
    label.textContent = Math.round(value).toLocaleString();
    root.append(label);
  }
  for (const [ts, anchor] of [[t0, 'start'], [t1, 'end']]) {
    const label = svg('text', {x: x(ts), y: height - 6, 'text-anchor': anchor, class: 'axis'});
    label.textContent = new Date(ts).toLocaleTimeString([], {hour: '2-digit', minute: '2-digit'});
    root.append(label);
  }
  series.forEach((s, i) => {
    const points = [...s.points].sort((a, b) => a.ts - b.ts);
    if (!points.length) return;
    const d = points.map((p, j) => `${j ? 'L' : 'M'}${x(p.ts).toFixed(1)},${y(p.value).toFixed(1)}`);
    const path = svg('path', {d: d.join(' '), class: `line ${s.className || `series-${i}`}`});
    const tip = svg('title', {});
    tip.textContent = s.label;
    path.append(tip);
    root.append(path);
  });
  return root;
}

// The legend under a chart.
export function legend(series) {
  const list = document.createElement('ul');
  list.className = 'legend';
  series.forEach((s, i) => {
    const item = document.createElement('li');
    item.className = s.className || `series-${i}`;
    item.textContent = s.label;
    list.append(item);
  });
  return list;
}
