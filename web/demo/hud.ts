// The heads-up display: connection figures, the inventory with its drop
// buttons, and the last error. Updated a few times a second, not every
// frame: text that changes 60 times a second is unreadable and costs
// layout.

import type { ClientState, Item } from '../src/index.js';

/** The element with this id, which index.html must have. */
export function byId<T extends HTMLElement>(id: string): T {
  const el = document.getElementById(id);
  if (!el) throw new Error(`index.html has no #${id}`);
  return el as T;
}

function bytesPerSecond(n: number): string {
  if (n >= 1024 * 1024) return `${(n / 1024 / 1024).toFixed(1)} MiB/s`;
  if (n >= 1024) return `${(n / 1024).toFixed(1)} KiB/s`;
  return `${Math.round(n)} B/s`;
}

export interface HudView {
  state: ClientState;
  /** "playing", "reconnecting (attempt 2)", ... */
  status: string;
  /** Entities in view. */
  entities: number;
  lastError: string;
  notice: string;
  /** The event log's lines, oldest first (rooms cleared, boss phases, doors, deaths). */
  events: readonly LogLine[];
}

/** A line of the HUD's event log; important ones (a room cleared, a boss phase) stand out. */
export interface LogLine {
  text: string;
  important: boolean;
}

export class Hud {
  private readonly fields = {
    status: byId('hud-status'), map: byId('hud-map'), instance: byId('hud-instance'), player: byId('hud-player'),
    tick: byId('hud-tick'), rtt: byId('hud-rtt'), down: byId('hud-down'), entities: byId('hud-entities'),
    resumes: byId('hud-resumes'), transfers: byId('hud-transfers'),
  };
  private readonly inventory = byId<HTMLUListElement>('inventory');
  private readonly lastError = byId('last-error');
  private readonly notice = byId('notice');
  private readonly events = byId<HTMLUListElement>('events');
  /** The event log as last drawn; undefined before the first. */
  private shownEvents: string | undefined;
  /** The inventory as last drawn, so the list (and a button under the pointer) is only rebuilt when it changed; undefined before the first. */
  private shownItems: string | undefined;

  /** onDrop is called with an item's id when its drop button is clicked. */
  constructor(private readonly onDrop: (item: string) => void) {}

  update(v: HudView): void {
    const s = v.state, f = this.fields;
    f.status.textContent = v.status;
    f.map.textContent = s.map || '-';
    f.instance.textContent = s.instance || '-';
    f.player.textContent = s.playerId ? String(s.playerId) : '-';
    f.tick.textContent = String(s.tick);
    f.rtt.textContent = s.rttMs === undefined ? '-' : `${s.rttMs.toFixed(0)} ms`;
    f.down.textContent = bytesPerSecond(s.bytesPerSecond);
    f.entities.textContent = String(v.entities);
    f.resumes.textContent = String(s.resumes);
    f.transfers.textContent = String(s.transfers);
    this.lastError.textContent = v.lastError || 'none';
    this.notice.textContent = v.notice;
    this.showInventory(s.inventory);
    this.showEvents(v.events);
  }

  /** The log, newest first. */
  private showEvents(lines: readonly LogLine[]): void {
    const key = lines.map((l) => l.text).join('\n');
    if (key === this.shownEvents) return;
    this.shownEvents = key;
    const rows = [...lines].reverse().map((line) => {
      const li = document.createElement('li');
      li.textContent = line.text;
      if (line.important) li.className = 'important';
      return li;
    });
    if (rows.length === 0) {
      const empty = document.createElement('li');
      empty.className = 'empty';
      empty.textContent = 'nothing yet';
      rows.push(empty);
    }
    this.events.replaceChildren(...rows);
  }

  private showInventory(items: readonly Item[]): void {
    const key = items.map((i) => i.id).join('\n');
    if (key === this.shownItems) return;
    this.shownItems = key;
    const rows = items.map((item) => {
      const li = document.createElement('li');
      const name = document.createElement('span');
      name.textContent = item.kind;
      name.title = item.id;
      const drop = document.createElement('button');
      drop.type = 'button';
      drop.textContent = 'drop';
      drop.addEventListener('click', () => this.onDrop(item.id));
      li.append(name, drop);
      return li;
    });
    if (rows.length === 0) {
      const empty = document.createElement('li');
      empty.className = 'empty';
      empty.textContent = 'empty: walk onto loot (yellow) and press F';
      rows.push(empty);
    }
    this.inventory.replaceChildren(...rows);
  }
}
