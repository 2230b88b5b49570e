/**
 * The demo page (`/demo` on a running engine): the web SDK, loaded from `/sdk/web.js`, driven by
 * a few buttons. Paste the SDK key `make run` printed, log in, subscribe, then send a
 * notification to that user with the curl command the page shows.
 */
import type * as Sdk from '../src/index.ts';

declare const svc: typeof Sdk;

const root = document.getElementById('demo') as HTMLElement;
root.innerHTML = `
<h1>Web SDK demo</h1>
<form id="start"><label>SDK key <input name="key" required size="40" autocomplete="off"></label>
<label>External id <input name="user" required value="demo-user"></label> <button>Log in</button></form>
<section hidden id="signed">
<form id="tag"><label>Tag <input name="k" value="plan"></label> <label>= <input name="v" value="pro"></label> <button>Set tag</button></form>
<form id="event"><label>Event <input name="name" value="opened_demo"></label> <button>Send event</button></form>
<p><button id="subscribe">Subscribe to notifications</button> <button id="optout">Opt out of Web Push</button>
<button id="optin">Opt in</button> <button id="logout">Log out</button></p>
<p>Send yourself a notification (REST key from <code>make run</code>):</p><pre id="curl"></pre>
</section>
<h2>Log</h2><pre id="log"></pre>`;

const $ = <T extends Element>(selector: string): T => root.querySelector(selector) as T;
const log = (line: string): void => void $('#log').prepend(`${new Date().toLocaleTimeString()} ${line}\n`);

async function step(what: string, work: () => Promise<unknown>): Promise<void> {
  try {
    const result = await work();
    log(`${what}${typeof result === 'string' ? `: ${result}` : ''}`);
  } catch (err) {
    log(`${what} failed: ${err instanceof Error ? `${(err as Sdk.SvcError).code ?? err.name}: ${err.message}` : String(err)}`);
  }
}

const field = (form: HTMLFormElement, name: string): string => (form.elements.namedItem(name) as HTMLInputElement).value.trim();

function on(selector: string, what: string, work: (form: HTMLFormElement) => Promise<unknown>): void {
  const target = $(selector);
  target.addEventListener(target.tagName === 'FORM' ? 'submit' : 'click', (e) => {
    e.preventDefault();
    void step(what, () => work(e.currentTarget as HTMLFormElement));
  });
}

on('#start', 'logged in', async (form) => {
  const user = field(form, 'user');
  await svc.init({ url: location.origin, key: field(form, 'key'), worker: '/sdk/web-sw.js', scope: '/', onError: (e) => log(`refused: ${e.code}: ${e.message}`) });
  await svc.login(user);
  $<HTMLElement>('#signed').hidden = false;
  $('#curl').textContent = `curl -X POST ${location.origin}/api/notifications -H "Authorization: Bearer $REST_KEY" -H 'Content-Type: application/json' \\
  -d '{"include_external_user_ids":["${user}"],"headings":{"en":"Hello"},"contents":{"en":"From the engine"},"url":"${location.origin}/demo"}'`;
  return svc.flushed();
});
on('#tag', 'tag set', (form) => svc.setTags({ [field(form, 'k')]: field(form, 'v') }).then(svc.flushed));
on('#event', 'event sent', (form) => svc.track(field(form, 'name')).then(svc.flushed));
on('#subscribe', 'subscribed', () => svc.subscribe());
on('#optout', 'opted out', () => svc.optOut().then(svc.flushed));
on('#optin', 'opted in', () => svc.optIn().then(svc.flushed));
on('#logout', 'logged out', () => svc.logout());
