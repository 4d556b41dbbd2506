// The heads-up display: connection figures, the inventory (the bag with
// its weight, what is worn in each slot, the skills) with its buttons, and
// the last error. Updated a few times a second, not every frame: text that
// changes 60 times a second is unreadable and costs layout.

import { EQUIPMENT_SLOTS, bagItems, isSlot, wornItems } from '../src/index.js';
import type { ClientState, Item, ItemDefinition, PackDefinitions, Skill, Slot } from '../src/index.js';

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
  /** The last refused inventory action (drop, wear, take off), its code first; '' after one that went through. */
  inventoryError: string;
  /** The definitions of the map's content pack, once loaded: where each kind is worn, its stats. */
  pack?: PackDefinitions;
}

/** What the inventory's buttons do. */
export interface InventoryActions {
  drop(item: string): void;
  /** Use up a consumable (a potion heals). */
  use(item: string): void;
  /** Wear the bag item in slot. */
  equip(item: string, slot: Slot): void;
  /** Put what slot holds back in the bag. */
  unequip(slot: Slot): void;
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
  private readonly weight = byId('inventory-weight');
  private readonly equipment = byId<HTMLUListElement>('equipment');
  private readonly skills = byId<HTMLUListElement>('skills');
  private readonly inventoryError = byId('inventory-error');
  private readonly lastError = byId('last-error');
  private readonly notice = byId('notice');
  private readonly events = byId<HTMLUListElement>('events');
  /** The event log as last drawn; undefined before the first. */
  private shownEvents: string | undefined;
  /** The inventory as last drawn, so the lists (and a button under the pointer, a slot being chosen) are only rebuilt when it changed; undefined before the first. */
  private shownItems: string | undefined;
  private shownSkills: string | undefined;
  /**
   * The slot each kind was last seen worn in: what a bag item of that kind
   * offers first when it fits several.
   */
  private readonly slotOfKind = new Map<string, Slot>();

  constructor(private readonly actions: InventoryActions) {}

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
    this.showWeight(s);
    this.showInventory(s.inventory, v.pack);
    this.showSkills(s.skills);
    this.inventoryError.textContent = v.inventoryError;
    this.showEvents(v.events);
  }

  /** The bag's figures: items, the weight of everything carried and worn against the most, and whether it slows. */
  private showWeight(s: ClientState): void {
    const bag = bagItems(s.inventory).length;
    const slowed = s.speedFactor < 1;
    this.weight.textContent = `${bag} ${bag === 1 ? 'item' : 'items'} · weight ${round(s.weight)}${s.bag.maxWeight ? ` / ${round(s.bag.maxWeight)}` : ''}` +
      (slowed ? ` · slowed to ${Math.round(s.speedFactor * 100)}%` : '');
    this.weight.className = slowed ? 'figure slowed' : 'figure';
    this.weight.title = s.bag.encumberedSpeed > 0
      ? `above ${round(s.bag.encumberedAt)} you walk at ${Math.round(s.bag.encumberedSpeed * 100)}% of your speed`
      : '';
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

  /**
   * The bag's items (wear in one of the slots the pack says it fits, use
   * a consumable, drop) and the worn ones by slot (take off). Before the pack's
   * definitions are loaded every slot is offered, and the server refuses
   * a wrong one with illegal_slot.
   */
  private showInventory(items: readonly Item[], pack: PackDefinitions | undefined): void {
    const key = `${pack?.name ?? ''}\n` + items.map((i) => `${i.id}@${i.slot ?? ''}`).join('\n');
    if (key === this.shownItems) return;
    this.shownItems = key;
    const worn = wornItems(items);
    for (const [slot, item] of Object.entries(worn)) {
      if (isSlot(slot)) this.slotOfKind.set(item.kind, slot);
    }
    const bag = bagItems(items).map((item) => {
      const def = pack?.items.find((d) => d.kind === item.kind);
      const slots = def ? (def.slots ?? []).filter(isSlot) : EQUIPMENT_SLOTS;
      const name = named(item, def);
      const drop = button('drop', () => this.actions.drop(item.id));
      if (def?.use !== undefined) {
        const use = button('use', () => this.actions.use(item.id));
        use.title = `heals ${def.use.heal}`;
        return row(name, use, drop);
      }
      if (slots.length === 0) return row(name, span('carried', 'slot'), drop);
      const choose = document.createElement('select');
      choose.setAttribute('aria-label', `the slot to wear ${item.kind} in`);
      choose.append(...slots.map((slot) => new Option(slot, slot)));
      const last = this.slotOfKind.get(item.kind);
      choose.value = last !== undefined && slots.includes(last) ? last : slots[0]!;
      const wear = button('wear', () => {
        if (isSlot(choose.value)) this.actions.equip(item.id, choose.value);
      });
      wear.title = 'wear it in the slot beside it';
      return row(name, choose, wear, drop);
    });
    this.inventory.replaceChildren(...orEmpty(bag, 'empty: walk onto loot (yellow) and press F'));
    const wornRows = EQUIPMENT_SLOTS.flatMap((slot) => {
      const item = worn[slot];
      if (item === undefined) return [];
      const label = document.createElement('span');
      const name = named(item, pack?.items.find((d) => d.kind === item.kind));
      label.append(span(slot, 'slot'), ' ', name);
      return [row(label, button('take off', () => this.actions.unequip(slot)))];
    });
    this.equipment.replaceChildren(...orEmpty(wornRows, 'nothing: "wear" a bag item'));
  }

  private showSkills(skills: readonly Skill[]): void {
    const key = skills.map((s) => `${s.name} ${s.level} ${s.xp}`).join('\n');
    if (key === this.shownSkills) return;
    this.shownSkills = key;
    const rows = skills.map((s) => row(span(s.name), span(`level ${s.level} · ${s.xp} xp`, 'figure')));
    this.skills.replaceChildren(...orEmpty(rows, 'none yet'));
  }
}

function round(v: number): string {
  return String(Math.round(v * 10) / 10);
}

function span(text: string, className = ''): HTMLSpanElement {
  const el = document.createElement('span');
  el.textContent = text;
  if (className) el.className = className;
  return el;
}

/** An item's kind, its stats (from the pack's definitions) and id on hover. */
function named(item: Item, def: ItemDefinition | undefined): HTMLSpanElement {
  const el = span(item.kind);
  const stats = def === undefined ? [] : [
    `weight ${round(def.weight)}`,
    ...(def.attack ? [`attack +${def.attack}`] : []),
    ...(def.defence ? [`defence +${def.defence}`] : []),
    ...(def.requires ? [`needs ${def.requires.skill} ${def.requires.level}`] : []),
    ...(def.critical ? ['kept by the map'] : []),
  ];
  el.title = [...stats, item.id].join(' · ');
  return el;
}

function button(text: string, onClick: () => void): HTMLButtonElement {
  const el = document.createElement('button');
  el.type = 'button';
  el.textContent = text;
  el.addEventListener('click', onClick);
  return el;
}

function row(...children: (Node | string)[]): HTMLLIElement {
  const li = document.createElement('li');
  li.append(...children);
  return li;
}

/** rows, or one muted line saying why there are none. */
function orEmpty(rows: HTMLLIElement[], empty: string): HTMLLIElement[] {
  if (rows.length > 0) return rows;
  const li = row(empty);
  li.className = 'empty';
  return [li];
}
