/**
 * `GET /api/docs`: an interactive API reference rendered in the browser from /api/openapi.json,
 * self-contained (no CDN: deployments may have no internet). Each operation has a form that sends
 * a real request with the key typed at the top.
 */
export const docsPage = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>API reference</title>
<style>
  body { font: 14px/1.45 system-ui, sans-serif; margin: 0; color: #1d2330; background: #f6f7f9; }
  header { background: #1d2330; color: #fff; padding: 14px 24px; display: flex; gap: 16px; align-items: center; }
  header h1 { font-size: 17px; margin: 0; flex: 1; }
  header input { width: 360px; padding: 6px 8px; border-radius: 4px; border: 0; font: inherit; }
  main { max-width: 980px; margin: 20px auto; padding: 0 16px; }
  details { background: #fff; border: 1px solid #dde1e7; border-radius: 6px; margin: 8px 0; }
  summary { padding: 10px 14px; cursor: pointer; display: flex; gap: 12px; align-items: baseline; }
  .m { font: 600 12px ui-monospace, monospace; text-transform: uppercase; width: 56px; color: #fff; border-radius: 3px; text-align: center; padding: 2px 0; }
  .get { background: #2f7d4f; } .post { background: #2d5fa8; } .put { background: #8a5a12; } .delete { background: #a83232; }
  code, pre, textarea { font: 12.5px ui-monospace, monospace; }
  .body { padding: 0 14px 14px; }
  textarea { width: 100%; min-height: 110px; box-sizing: border-box; }
  pre { background: #f0f2f5; padding: 10px; overflow: auto; max-height: 320px; }
  button { padding: 6px 14px; font: inherit; cursor: pointer; }
  .param { display: flex; gap: 8px; align-items: center; margin: 6px 0; }
  .param input { flex: 1; padding: 4px 6px; font: inherit; }
</style>
</head>
<body>
<header><h1 id="title">API reference</h1><input id="key" placeholder="Bearer key (SDK or REST)" autocomplete="off"></header>
<main id="ops"><p>Loading /api/openapi.json…</p></main>
<script>
const el = (tag, attrs = {}, ...kids) => { const n = document.createElement(tag); Object.assign(n, attrs); n.append(...kids); return n; };
function example(schema) {
  if (!schema) return undefined;
  if (schema.anyOf) return example(schema.anyOf[0]);
  if (schema.const !== undefined) return schema.const;
  if (schema.type === 'object') {
    const out = {};
    for (const name of schema.required || []) out[name] = example(schema.properties[name]);
    return out;
  }
  if (schema.type === 'array') return [example(schema.items)];
  if (schema.type === 'number' || schema.type === 'integer') return 1;
  if (schema.type === 'boolean') return true;
  return 'string';
}
async function send(method, path, inputs, bodyArea, out) {
  let url = path;
  const headers = {};
  for (const [p, input] of inputs) {
    if (p.in === 'path') url = url.replace('{' + p.name + '}', encodeURIComponent(input.value));
    else if (input.value) headers[p.name] = input.value;
  }
  const key = document.getElementById('key').value.trim();
  if (key) headers.authorization = 'Bearer ' + key;
  const init = { method: method.toUpperCase(), headers };
  if (bodyArea) { headers['content-type'] = 'application/json'; init.body = bodyArea.value; }
  out.textContent = '…';
  try {
    const res = await fetch(url, init);
    const text = await res.text();
    let shown = text;
    try { shown = JSON.stringify(JSON.parse(text), null, 2); } catch {}
    out.textContent = res.status + ' ' + res.statusText + '\\n\\n' + shown;
  } catch (err) { out.textContent = String(err); }
}
fetch('/api/openapi.json').then((r) => r.json()).then((doc) => {
  document.getElementById('title').textContent = doc.info.title + ' ' + doc.info.version;
  const ops = document.getElementById('ops');
  ops.replaceChildren(el('p', { textContent: doc.info.description }));
  for (const [path, methods] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(methods)) {
      const inputs = (op.parameters || []).map((p) => [p, el('input', { placeholder: p.description || p.name })]);
      const schema = op.requestBody && op.requestBody.content['application/json'].schema;
      const bodyArea = schema ? el('textarea', { value: JSON.stringify(example(schema), null, 2) }) : null;
      const out = el('pre', { textContent: 'Answers: ' + Object.entries(op.responses).map(([s, r]) => s + ' ' + r.description).join('; ') });
      const button = el('button', { textContent: 'Send', onclick: () => send(method, path, inputs, bodyArea, out) });
      const body = el('div', { className: 'body' },
        ...inputs.map(([p, input]) => el('label', { className: 'param' }, el('code', { textContent: p.name + (p.in === 'header' ? ' (header)' : '') }), input)),
        ...(schema ? [el('p', {}, 'Body schema:'), el('pre', { textContent: JSON.stringify(schema, null, 2) }), el('p', {}, 'Body:'), bodyArea] : []),
        el('p', {}, button), out);
      ops.append(el('details', {}, el('summary', {}, el('span', { className: 'm ' + method, textContent: method }), el('code', { textContent: path }), el('span', { textContent: op.summary })), body));
    }
  }
});
</script>
</body>
</html>
`;
