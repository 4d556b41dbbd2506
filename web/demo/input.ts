// Keyboard input: which movement keys are held, as one direction, and the
// page's action keys.

import type { Point } from './path.js';

const AXES: Record<string, [number, number]> = {
  KeyW: [0, -1], ArrowUp: [0, -1],
  KeyS: [0, 1], ArrowDown: [0, 1],
  KeyA: [-1, 0], ArrowLeft: [-1, 0],
  KeyD: [1, 0], ArrowRight: [1, 0],
};

/** Typing into the join form or a button's label must not move the player. */
function typing(target: EventTarget | null): boolean {
  return target instanceof HTMLInputElement || target instanceof HTMLTextAreaElement || target instanceof HTMLSelectElement;
}

export class Keyboard {
  private readonly held = new Set<string>();
  private readonly actions = new Map<string, () => void>();

  constructor(target: Window) {
    target.addEventListener('keydown', (e) => {
      if (typing(e.target) || e.altKey || e.ctrlKey || e.metaKey) return;
      if (e.code in AXES) {
        this.held.add(e.code);
        e.preventDefault(); // arrows would scroll the page
        return;
      }
      const action = this.actions.get(e.code);
      if (action && !e.repeat) {
        e.preventDefault();
        action();
      }
    });
    target.addEventListener('keyup', (e) => this.held.delete(e.code));
    // A key released while the window had no focus never sends keyup.
    target.addEventListener('blur', () => this.held.clear());
  }

  /** Runs fn when the key with this code (KeyboardEvent.code) goes down. */
  onKey(code: string, fn: () => void): void {
    this.actions.set(code, fn);
  }

  /** The held keys' direction, of length 1 (diagonals normalised), or null when none is held. */
  direction(): Point | null {
    let x = 0, y = 0;
    for (const code of this.held) {
      const axis = AXES[code];
      if (axis) { x += axis[0]; y += axis[1]; }
    }
    // Opposite keys (or W and Up twice) may add up to more than 1.
    x = Math.sign(x);
    y = Math.sign(y);
    if (x === 0 && y === 0) return null;
    const len = Math.hypot(x, y);
    return { x: x / len, y: y / len };
  }
}
