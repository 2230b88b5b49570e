import { advantage, type SummaryRow } from './summary.ts';

/** A report's summary rows with where they came from. */
export interface Source {
  file: string;
  started_at: string;
  rows: SummaryRow[];
}

/** 12345.6 → `12 346`; small values keep up to two decimals. */
export function figure(value: number): string {
  const rounded = Math.abs(value) >= 100 ? Math.round(value) : Math.round(value * 100) / 100;
  const [whole = '', decimals] = String(rounded).split('.');
  const grouped = whole.replace(/\B(?=(\d{3})+(?!\d))/g, ' ');
  return decimals === undefined ? grouped : `${grouped}.${decimals}`;
}

function ratioCell(row: SummaryRow, reference: SummaryRow['ceiling'], asMultiple: boolean): string {
  const ratio = advantage(row, reference);
  if (ratio === null) return '';
  return asMultiple ? `${ratio.toFixed(1)}×` : `${Math.round(ratio * 100)}%`;
}

/** The Markdown table of every summary row, one line per row, with the report each comes from. */
export function markdownTable(sources: Source[]): string {
  const lines = [
    '| scenario | measure | this engine | ceiling | vs ceiling | usual alternative | vs it | last release | vs it | goal | report |',
    '|---|---|---|---|---|---|---|---|---|---|---|',
  ];
  for (const source of sources) {
    for (const row of source.rows) {
      const reference = (r: SummaryRow['ceiling'] | undefined): string => (r === null || r === undefined ? '' : `${r.name}: ${figure(r.value)}`);
      const release = row.release ?? null;
      const goal = row.goal === null ? '' : `${row.goal.text}: ${row.goal.met ? '**met**' : '**not met**'}`;
      lines.push(
        `| ${row.scenario} | ${row.measure} | ${figure(row.value)} ${row.unit} | ${reference(row.ceiling)} | ${ratioCell(row, row.ceiling, false)} | ${reference(row.baseline)} | ${ratioCell(row, row.baseline, true)} | ${reference(release)} | ${ratioCell(row, release, true)} | ${goal} | \`${source.file}\` |`,
      );
    }
  }
  return lines.join('\n');
}

/**
 * Every row with a goal, one line each, the goals missed first: what was measured, against what,
 * and whether it met the goal. `make bench` prints it after the table.
 */
export function goalLines(sources: Source[]): string[] {
  const rows = sources.flatMap((source) => source.rows.filter((row) => row.goal !== null).map((row) => ({ row, file: source.file })));
  const line = ({ row, file }: (typeof rows)[number]): string => {
    const against = [
      { reference: row.ceiling, cell: ratioCell(row, row.ceiling, false), of: 'of' },
      { reference: row.baseline, cell: ratioCell(row, row.baseline, true), of: 'against' },
      { reference: row.release ?? null, cell: ratioCell(row, row.release ?? null, true), of: 'against' },
    ].flatMap(({ reference, cell, of }) => (reference === null || cell === '' ? [] : [`${cell} ${of} ${reference.name} (${figure(reference.value)})`]));
    const status = row.goal?.met === true ? 'met' : 'NOT MET';
    return `${status.padEnd(7)} ${row.scenario}: ${row.measure}: ${figure(row.value)} ${row.unit}${against.length > 0 ? `, ${against.join(', ')}` : ''}; goal ${row.goal?.text ?? ''} (${file})`;
  };
  const missed = rows.filter(({ row }) => row.goal?.met !== true);
  return [`goals: ${rows.length - missed.length} met, ${missed.length} not met`, ...missed.map(line), ...rows.filter(({ row }) => row.goal?.met === true).map(line)];
}

const escape = (text: string): string => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

interface Bar {
  label: string;
  ratio: number;
}

/** One panel of horizontal bars from 0 to `max`, with a line at `mark` (the goal). */
function panel(title: string, bars: Bar[], max: number, mark: number, text: (ratio: number) => string, top: number): { svg: string; height: number } {
  const labelWidth = 330;
  const barWidth = 330;
  const rowHeight = 22;
  const parts = [`<text x="8" y="${top + 16}" font-weight="bold">${escape(title)}</text>`];
  bars.forEach((bar, i) => {
    const y = top + 28 + i * rowHeight;
    const width = Math.max(1, Math.min(1, bar.ratio / max) * barWidth);
    const color = bar.ratio >= mark ? '#2f7d4a' : '#b5523b';
    parts.push(
      `<text x="8" y="${y + 14}">${escape(bar.label)}</text>`,
      `<rect x="${labelWidth}" y="${y + 3}" width="${width.toFixed(1)}" height="14" fill="${color}"/>`,
      `<text x="${labelWidth + width + 6}" y="${y + 14}">${escape(text(bar.ratio))}</text>`,
    );
  });
  const markX = labelWidth + (mark / max) * barWidth;
  const bottom = top + 28 + bars.length * rowHeight;
  parts.push(`<line x1="${markX.toFixed(1)}" y1="${top + 26}" x2="${markX.toFixed(1)}" y2="${bottom}" stroke="#333" stroke-dasharray="4 3"/>`);
  return { svg: parts.join('\n'), height: bottom - top + 10 };
}

/**
 * An SVG chart: each row with a ceiling as its share of it (goal line at 75%), each row with a
 * usual alternative as a multiple of it (goal line at 2×).
 */
export function svgChart(sources: Source[]): string {
  const rows = sources.flatMap((s) => s.rows);
  // Labels are cut to fit left of the bars (330 px at 12 px); the table has them whole.
  const label = (row: SummaryRow): string => {
    const whole = `${row.scenario}: ${row.measure}`;
    return whole.length <= 52 ? whole : `${whole.slice(0, 51)}…`;
  };
  const ceilingBars = rows.flatMap((row) => {
    const ratio = advantage(row, row.ceiling);
    return ratio === null ? [] : [{ label: label(row), ratio }];
  });
  const baselineBars = rows.flatMap((row) => {
    const ratio = advantage(row, row.baseline);
    return ratio === null ? [] : [{ label: label(row), ratio }];
  });
  const first = panel('Share of the ceiling measured in the same run (dashed: 75%)', ceilingBars, 1.2, 0.75, (r) => `${Math.round(r * 100)}%`, 0);
  const maxMultiple = Math.max(2.5, ...baselineBars.map((b) => b.ratio));
  const second = panel('Multiple of the usual alternative, Fastify + BullMQ (dashed: 2×)', baselineBars, maxMultiple * 1.1, 2, (r) => `${r.toFixed(1)}×`, first.height);
  const height = first.height + second.height;
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="760" height="${height}" viewBox="0 0 760 ${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="760" height="${height}" fill="#fff"/>`,
    first.svg,
    second.svg,
    '</svg>',
    '',
  ].join('\n');
}
