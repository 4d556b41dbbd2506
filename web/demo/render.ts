// Canvas rendering: the static world (drawn once per map into an offscreen
// layer) and the entities on top, with a camera that follows the player.

import { CombatState, EffectState, EntityKind, combatState, doorOf, isDoorLocked, isDoorOpen } from '../src/index.js';
import type { Entity, StaticWorld } from '../src/index.js';
import type { Point } from './path.js';

// Portal entities are drawn from the welcome's list, which has their
// radius; kinds this page does not know are not drawn (docs/protocol.md).
const { Player: PLAYER, NPC, Loot: LOOT, Door: DOOR } = EntityKind;

/** How many world units the shorter side of the window shows. */
const VIEW_UNITS = 320;

/** A new player's and NPC's hit points (sim's MaxHP); hp bars are drawn against it. */
const MAX_HP = 100;

/**
 * The static layer's pixels per world unit, and its largest side (a
 * 4096-unit map still fits in memory). Everything on it is a rectangle on
 * whole units, so 2 pixels a unit stay sharp when scaled up without
 * smoothing; a finer layer would be scaled down every frame instead, which
 * costs Chromium's software canvas milliseconds per frame (web/e2e/bench.mjs).
 */
const LAYER_SCALE = 2, LAYER_MAX_PX = 4096;

const GROUND: Record<string, string> = { meadow: '#5f8f45', forest: '#3c6435', desert: '#cdb57a', dungeon: '#38333d' };
const COLLIDER: Record<string, string> = { rock: '#80807a', tree: '#24501f', cactus: '#4e8a3a', wall: '#5d5866' };
const PROP: Record<string, string> = {
  flower: '#e879a9', grass: '#86bf5a', pebble: '#a3a39b', fern: '#5aa04a', mushroom: '#d65a4a', leaves: '#9a7a2c',
  bones: '#e8e2d0', tumbleweed: '#a4875a', 'dry-grass': '#b9a15d', torch: '#ffa630', rubble: '#6f6a72', cobweb: '#c8c8d0',
};

/** Tints of a dungeon's rooms by role. */
const ROOM: Record<string, string> = { boss: 'rgba(160, 40, 50, 0.22)', key: 'rgba(230, 190, 60, 0.14)' };

/** A colour for a kind no table knows, stable per name. */
function fallback(kind: string): string {
  let h = 0;
  for (const c of kind) h = (h * 31 + c.charCodeAt(0)) % 360;
  return `hsl(${h} 35% 55%)`;
}

export interface PortalView { entity: number; to: string; x: number; y: number; radius: number }

/** What one frame shows. */
export interface Scene {
  world: StaticWorld | undefined;
  /** Entities to draw, this player included (at its predicted position). */
  entities: readonly Entity[];
  selfId: number;
  /** Where the camera looks: the player's predicted position. */
  focus: Point;
  portals: readonly PortalView[];
  /** The rest of a click-to-move path. */
  path: readonly Point[];
  /** Portal entity ids the player stands within the radius of: drawn highlighted. */
  inRange?: ReadonlySet<number>;
}

interface Layer { world: StaticWorld; canvas: HTMLCanvasElement }

export class Renderer {
  private readonly ctx: CanvasRenderingContext2D;
  private layer: Layer | undefined;
  /** CSS pixels per world unit, and the camera centre, of the last frame: toWorld inverts them. */
  private zoom = 1;
  private centre: Point = { x: 0, y: 0 };
  private cssW = 0;
  private cssH = 0;

  constructor(private readonly canvas: HTMLCanvasElement) {
    const ctx = canvas.getContext('2d', { alpha: false });
    if (!ctx) throw new Error('this browser has no 2D canvas');
    this.ctx = ctx;
  }

  /** Matches the backing store to the element's size and the screen's pixel ratio; cheap when nothing changed. */
  private fit(): number {
    const dpr = window.devicePixelRatio || 1;
    this.cssW = this.canvas.clientWidth;
    this.cssH = this.canvas.clientHeight;
    const w = Math.max(1, Math.round(this.cssW * dpr)), h = Math.max(1, Math.round(this.cssH * dpr));
    if (this.canvas.width !== w || this.canvas.height !== h) {
      this.canvas.width = w;
      this.canvas.height = h;
    }
    return dpr;
  }

  /** The world position under a point of the window (a click), as of the last frame. */
  toWorld(clientX: number, clientY: number): Point {
    const r = this.canvas.getBoundingClientRect();
    return {
      x: (clientX - r.left - this.cssW / 2) / this.zoom + this.centre.x,
      y: (clientY - r.top - this.cssH / 2) / this.zoom + this.centre.y,
    };
  }

  draw(scene: Scene): void {
    const dpr = this.fit();
    const ctx = this.ctx;
    ctx.setTransform(1, 0, 0, 1, 0, 0);
    ctx.fillStyle = '#15131a';
    ctx.fillRect(0, 0, this.canvas.width, this.canvas.height);
    this.zoom = Math.min(this.cssW, this.cssH) / VIEW_UNITS;
    this.centre = this.cameraCentre(scene);
    const s = this.zoom * dpr;
    ctx.setTransform(s, 0, 0, s, dpr * this.cssW / 2 - this.centre.x * s, dpr * this.cssH / 2 - this.centre.y * s);
    if (scene.world) this.drawWorld(scene.world);
    this.drawPortals(scene);
    this.drawPath(scene);
    this.drawEntities(scene);
  }

  /**
   * The camera follows the player but stops at the map's edges, so the
   * window is not half empty near them; a map smaller than the view is
   * centred.
   */
  private cameraCentre(scene: Scene): Point {
    const w = scene.world;
    if (!w) return scene.focus;
    const halfW = this.cssW / 2 / this.zoom, halfH = this.cssH / 2 / this.zoom;
    const clamp = (v: number, half: number, size: number) =>
      size <= 2 * half ? size / 2 : Math.min(Math.max(v, half), size - half);
    return { x: clamp(scene.focus.x, halfW, w.width), y: clamp(scene.focus.y, halfH, w.height) };
  }

  /** Copies the visible part of the world's layer: scaling all of a large map's layer every frame would cost milliseconds. */
  private drawWorld(world: StaticWorld): void {
    if (this.layer?.world !== world) this.layer = { world, canvas: paintWorld(world) };
    const layer = this.layer.canvas, scale = layer.width / world.width;
    const v = this.viewRect(1);
    const x0 = Math.max(0, Math.floor(v.x0)), y0 = Math.max(0, Math.floor(v.y0));
    const x1 = Math.min(world.width, Math.ceil(v.x1)), y1 = Math.min(world.height, Math.ceil(v.y1));
    if (x1 <= x0 || y1 <= y0) return;
    this.ctx.imageSmoothingEnabled = false; // crisp cell edges when zoomed in
    this.ctx.drawImage(layer, x0 * scale, y0 * scale, (x1 - x0) * scale, (y1 - y0) * scale, x0, y0, x1 - x0, y1 - y0);
  }

  private drawPortals(scene: Scene): void {
    const ctx = this.ctx;
    const pulse = 0.5 + 0.5 * Math.sin(performance.now() / 300);
    for (const p of scene.portals) {
      const near = scene.inRange?.has(p.entity) ?? false;
      ctx.beginPath();
      ctx.arc(p.x, p.y, p.radius, 0, 2 * Math.PI);
      ctx.fillStyle = near ? 'rgba(190, 120, 255, 0.30)' : 'rgba(160, 100, 240, 0.16)';
      ctx.fill();
      ctx.lineWidth = 1;
      ctx.setLineDash([3, 3]);
      ctx.strokeStyle = near ? '#e0c0ff' : '#a878f0';
      ctx.stroke();
      ctx.setLineDash([]);
      this.label(`→ ${p.to}`, p.x, p.y - p.radius - 3, '#e9dcff');
      ctx.beginPath();
      ctx.arc(p.x, p.y, 4 + 2 * pulse, 0, 2 * Math.PI);
      ctx.fillStyle = '#c9a2ff';
      ctx.fill();
    }
  }

  private drawPath(scene: Scene): void {
    if (scene.path.length === 0) return;
    const ctx = this.ctx;
    ctx.beginPath();
    ctx.moveTo(scene.focus.x, scene.focus.y);
    for (const p of scene.path) ctx.lineTo(p.x, p.y);
    ctx.lineWidth = 1;
    ctx.setLineDash([2, 3]);
    ctx.strokeStyle = 'rgba(255, 255, 255, 0.7)';
    ctx.stroke();
    ctx.setLineDash([]);
    const end = scene.path[scene.path.length - 1]!;
    ctx.beginPath();
    ctx.arc(end.x, end.y, 3, 0, 2 * Math.PI);
    ctx.stroke();
  }

  /**
   * Entities batched by look: one path per kind filled at once, so 200
   * entities cost a handful of fills, not hundreds.
   */
  private drawEntities(scene: Scene): void {
    const ctx = this.ctx;
    const view = this.viewRect();
    const visible = scene.entities.filter((e) =>
      e.x >= view.x0 && e.x <= view.x1 && e.y >= view.y0 && e.y <= view.y1);
    const batch = (kind: number, shape: (e: Entity) => void, fill: string, only?: (e: Entity) => boolean) => {
      ctx.beginPath();
      for (const e of visible) if (e.kind === kind && e.id !== scene.selfId && (!only || only(e))) shape(e);
      ctx.fillStyle = fill;
      ctx.fill();
    };
    const circle = (r: number) => (e: Entity) => { ctx.moveTo(e.x + r, e.y); ctx.arc(e.x, e.y, r, 0, 2 * Math.PI); };
    this.drawDoors(scene.world, visible.filter((e) => e.kind === DOOR));
    this.drawTargets(scene.entities, visible);
    batch(LOOT, (e) => { ctx.moveTo(e.x, e.y - 4); ctx.lineTo(e.x + 3.5, e.y); ctx.lineTo(e.x, e.y + 4); ctx.lineTo(e.x - 3.5, e.y); ctx.closePath(); }, '#ffd23f');
    // NPCs walking home after a chase are drawn paler; dead players (waiting to respawn) grey.
    batch(NPC, circle(4.5), '#d8433a', (e) => combatState(e) !== CombatState.Returning);
    batch(NPC, circle(4.5), '#a0625c', (e) => combatState(e) === CombatState.Returning);
    batch(PLAYER, circle(5), '#4a8df0', (e) => combatState(e) !== CombatState.Dead);
    batch(PLAYER, circle(5), '#5d6470', (e) => combatState(e) === CombatState.Dead);
    this.drawEffects(visible);
    const self = visible.find((e) => e.id === scene.selfId);
    if (self) {
      ctx.beginPath();
      ctx.arc(self.x, self.y, 5.5, 0, 2 * Math.PI);
      ctx.fillStyle = combatState(self) === CombatState.Dead ? '#8a8670' : '#ffe14d';
      ctx.fill();
      ctx.lineWidth = 1.5;
      ctx.strokeStyle = '#1b1b1b';
      ctx.stroke();
      this.label(combatState(self) === CombatState.Dead ? 'you (dead)' : 'you', self.x, self.y - 11, '#ffffff');
    }
    this.drawHP(visible.filter((e) => (e.kind === PLAYER || e.kind === NPC) && combatState(e) !== CombatState.Dead));
  }

  /**
   * Doors over their cells (the static world's door the entity stands in
   * the middle of; an 8-unit square without it): closed ones solid wood,
   * locked ones iron with a gold lock, open ones only their frame, so the
   * floor shows through. Three batched looks.
   */
  private drawDoors(world: StaticWorld | undefined, doors: readonly Entity[]): void {
    const ctx = this.ctx;
    const rectOf = (e: Entity) => (world && doorOf(world, e)) || { x: e.x - 4, y: e.y - 4, w: 8, h: 8 };
    const looks: [(e: Entity) => boolean, string, string][] = [
      [(e) => !isDoorOpen(e) && !isDoorLocked(e), '#8a5a2b', '#4a2c10'],
      [(e) => !isDoorOpen(e) && isDoorLocked(e), '#4c4a58', '#1d1c24'],
      [(e) => isDoorOpen(e), 'rgba(138, 90, 43, 0.22)', 'rgba(200, 150, 90, 0.75)'],
    ];
    ctx.lineWidth = 0.75;
    for (const [which, fill, edge] of looks) {
      ctx.beginPath();
      for (const e of doors) {
        if (!which(e)) continue;
        const r = rectOf(e);
        ctx.rect(r.x, r.y, r.w, r.h);
      }
      ctx.fillStyle = fill;
      ctx.fill();
      ctx.strokeStyle = edge;
      ctx.stroke();
    }
    ctx.beginPath();
    for (const e of doors) {
      if (isDoorOpen(e) || !isDoorLocked(e)) continue;
      ctx.moveTo(e.x + 1.5, e.y);
      ctx.arc(e.x, e.y, 1.5, 0, 2 * Math.PI);
    }
    ctx.fillStyle = '#ffd23f';
    ctx.fill();
  }

  /** A ring around each fighter an ability's buff (gold) or debuff (violet) is on. */
  private drawEffects(visible: readonly Entity[]): void {
    const ctx = this.ctx;
    for (const [bit, colour] of [[EffectState.Strengthened, '#f2c14e'], [EffectState.Weakened, '#a66cff']] as const) {
      ctx.beginPath();
      for (const e of visible) {
        if ((e.kind !== PLAYER && e.kind !== NPC) || (e.state & bit) === 0) continue;
        ctx.moveTo(e.x + 7.5, e.y);
        ctx.arc(e.x, e.y, 7.5, 0, 2 * Math.PI);
      }
      ctx.lineWidth = 1.2;
      ctx.strokeStyle = colour;
      ctx.stroke();
    }
  }

  /** A faint line from each fighter on screen to whom it fights, when that one is in view. */
  private drawTargets(all: readonly Entity[], visible: readonly Entity[]): void {
    const ctx = this.ctx;
    let byId: Map<number, Entity> | undefined;
    ctx.beginPath();
    for (const e of visible) {
      if (combatState(e) !== CombatState.Fighting || e.target === 0 || (e.kind !== PLAYER && e.kind !== NPC)) continue;
      byId ??= new Map(all.map((t) => [t.id, t]));
      const t = byId.get(e.target);
      if (!t) continue;
      ctx.moveTo(e.x, e.y);
      ctx.lineTo(t.x, t.y);
    }
    ctx.lineWidth = 0.6;
    ctx.strokeStyle = 'rgba(255, 110, 90, 0.45)';
    ctx.stroke();
  }

  /** HP bars for players and NPCs, the only kinds with hit points that change; two fills for all of them. */
  private drawHP(living: readonly Entity[]): void {
    const ctx = this.ctx;
    const w = 10, h = 1.5, dy = 8;
    ctx.beginPath();
    for (const e of living) ctx.rect(e.x - w / 2, e.y - dy, w, h);
    ctx.fillStyle = 'rgba(0, 0, 0, 0.6)';
    ctx.fill();
    ctx.beginPath();
    for (const e of living) ctx.rect(e.x - w / 2, e.y - dy, w * Math.min(e.hp, MAX_HP) / MAX_HP, h);
    ctx.fillStyle = '#52d46a';
    ctx.fill();
  }

  private label(text: string, x: number, y: number, colour: string): void {
    const ctx = this.ctx;
    ctx.font = '6px system-ui, sans-serif';
    ctx.textAlign = 'center';
    ctx.fillStyle = colour;
    ctx.fillText(text, x, y);
  }

  /** The world rectangle on screen, with a margin (world units) so shapes on the edge are not cut off early. */
  private viewRect(margin = 10) {
    const halfW = this.cssW / 2 / this.zoom + margin, halfH = this.cssH / 2 / this.zoom + margin;
    return { x0: this.centre.x - halfW, x1: this.centre.x + halfW, y0: this.centre.y - halfH, y1: this.centre.y + halfH };
  }
}

/** The static world at a fixed resolution: ground by biome, colliders and props by kind. */
function paintWorld(world: StaticWorld): HTMLCanvasElement {
  const scale = Math.min(LAYER_SCALE, LAYER_MAX_PX / Math.max(world.width, world.height));
  const canvas = document.createElement('canvas');
  canvas.width = Math.ceil(world.width * scale);
  canvas.height = Math.ceil(world.height * scale);
  const ctx = canvas.getContext('2d');
  if (!ctx) return canvas;
  ctx.scale(scale, scale);
  ctx.fillStyle = GROUND[world.biome] ?? fallback(world.biome);
  ctx.fillRect(0, 0, world.width, world.height);
  // A faint cell grid shows the walkability cells that movement and paths use.
  ctx.strokeStyle = 'rgba(0, 0, 0, 0.06)';
  ctx.lineWidth = 1 / scale;
  ctx.beginPath();
  for (let x = 0; x <= world.width; x += world.cellSize * 4) { ctx.moveTo(x, 0); ctx.lineTo(x, world.height); }
  for (let y = 0; y <= world.height; y += world.cellSize * 4) { ctx.moveTo(0, y); ctx.lineTo(world.width, y); }
  ctx.stroke();
  for (const p of world.props) {
    ctx.fillStyle = PROP[p.kind] ?? fallback(p.kind);
    ctx.fillRect(p.x - 1, p.y - 1, 2, 2);
  }
  // The boss's room and the key's, tinted; their doors are entities, drawn every frame.
  for (const r of world.rooms) {
    const tint = ROOM[r.role];
    if (!tint) continue;
    ctx.fillStyle = tint;
    ctx.fillRect(r.x, r.y, r.w, r.h);
  }
  for (const c of world.colliders) {
    ctx.fillStyle = COLLIDER[c.kind] ?? fallback(c.kind);
    ctx.fillRect(c.x, c.y, c.w, c.h);
    ctx.fillStyle = 'rgba(0, 0, 0, 0.25)'; // a shadow edge, so adjacent obstacles read as blocks
    ctx.fillRect(c.x, c.y + c.h - 1, c.w, 1);
  }
  return canvas;
}
