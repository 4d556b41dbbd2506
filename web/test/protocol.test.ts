import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { CombatState, EQUIPMENT_SLOTS, EffectState, ErrorCode, combatState } from '../src/index.js';

/** A section of docs/protocol.md: from its heading to the next of the same level. */
function section(heading: string): string {
  const doc = readFileSync(new URL('../../docs/protocol.md', import.meta.url), 'utf8');
  const start = doc.indexOf(`\n${heading}\n`);
  expect(start, `docs/protocol.md has no "${heading}"`).toBeGreaterThanOrEqual(0);
  const level = heading.split(' ')[0]!;
  const end = doc.indexOf(`\n${level} `, start + heading.length + 1);
  return doc.slice(start, end === -1 ? undefined : end);
}

describe('ErrorCode', () => {
  it('is every code of docs/protocol.md, in its order (internal/protocol Codes)', () => {
    const documented = [...section('## Error codes').matchAll(/^\| `([a-z_]+)` \|/gm)].map((m) => m[1]);
    expect(Object.values(ErrorCode)).toStrictEqual(documented);
  });
});

describe('EQUIPMENT_SLOTS', () => {
  it('are the slots of docs/protocol.md, in its order', () => {
    const line = /worn in \(([^)]*)\)/.exec(section('### Items, equipment and skills'))?.[1] ?? '';
    expect(EQUIPMENT_SLOTS).toStrictEqual([...line.matchAll(/`([a-z]+)`/g)].map((m) => m[1]));
  });
});

describe('combatState', () => {
  it('reads the combat state under the effect bits', () => {
    const weakenedFighter = { state: CombatState.Fighting | EffectState.Weakened };
    const strengthenedDead = { state: CombatState.Dead | EffectState.Strengthened };
    expect([combatState(weakenedFighter), combatState(strengthenedDead), combatState({ state: CombatState.Returning })])
      .toStrictEqual([CombatState.Fighting, CombatState.Dead, CombatState.Returning]);
  });

  it('has the bits docs/protocol.md gives', () => {
    const entity = section('## Snapshots');
    expect(entity).toContain(`bit 2\n  (\`${EffectState.Strengthened}\`) strengthened`);
    expect(entity).toContain(`bit 3 (\`${EffectState.Weakened}\`) weakened`);
  });
});
