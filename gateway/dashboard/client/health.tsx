import { useEffect, useState } from 'preact/hooks';

/** How often the banner asks /readyz. */
const EVERY_MS = 5000;

/** What `/readyz` says when it is not ready: the message of its first error, or the status. */
async function readiness(): Promise<string | null> {
  try {
    const res = await fetch('/readyz', { cache: 'no-store' });
    if (res.ok) return null;
    const body = (await res.json().catch(() => null)) as { errors?: { code?: string; message?: string }[] } | null;
    const item = body?.errors?.[0];
    return item?.code === 'overloaded' ? `Overloaded: ${item.message ?? ''}` : `Not ready (${res.status}): ${item?.message ?? 'Redis or ClickHouse does not answer'}`;
  } catch {
    return 'The gateway does not answer.';
  }
}

/** A banner while the gateway is not ready: Redis full and writes refused, or a dependency down. */
export function HealthBanner() {
  const [problem, setProblem] = useState<string | null>(null);
  useEffect(() => {
    let live = true;
    const check = (): void => void readiness().then((p) => live && setProblem(p));
    check();
    const timer = setInterval(check, EVERY_MS);
    return () => {
      live = false;
      clearInterval(timer);
    };
  }, []);
  if (problem === null) return null;
  return (
    <div class="banner" role="alert">
      {problem}
    </div>
  );
}
