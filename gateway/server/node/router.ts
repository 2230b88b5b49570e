import type { PathPlan } from '../plan.ts';

/** A path of the plan that a request path matches, with its parameters still percent-encoded. */
export interface Match {
  plan: PathPlan;
  params: string[];
}

interface Pattern {
  plan: PathPlan;
  /** Each segment: its text, or null for a parameter. */
  segments: (string | null)[];
}

/**
 * Matches request paths to the plan's paths as uWS does: segment by segment, a parameter takes one
 * non-empty segment, and a literal segment wins over a parameter at the same place.
 */
export class Router {
  private readonly exact = new Map<string, PathPlan>();
  private readonly patterns: Pattern[] = [];

  constructor(paths: readonly PathPlan[]) {
    for (const plan of paths) {
      if (!plan.path.includes('{')) this.exact.set(plan.path, plan);
      else this.patterns.push({ plan, segments: plan.path.split('/').map((s) => (s.startsWith('{') ? null : s)) });
    }
  }

  match(path: string): Match | null {
    const plan = this.exact.get(path);
    if (plan !== undefined) return { plan, params: [] };
    const segments = path.split('/');
    let best: { match: Match; rank: string } | null = null;
    for (const pattern of this.patterns) {
      if (pattern.segments.length !== segments.length) continue;
      const params: string[] = [];
      let rank = '';
      const fits = pattern.segments.every((want, i) => {
        const got = segments[i] ?? '';
        if (want !== null) return (rank += '0'), want === got;
        params.push(got);
        return (rank += '1'), got !== '';
      });
      // The literal-first ranking: '0' (literal) sorts before '1' (parameter) at the first place they differ.
      if (fits && (best === null || rank < best.rank)) best = { match: { plan: pattern.plan, params }, rank };
    }
    return best?.match ?? null;
  }
}
