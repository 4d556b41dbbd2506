// Client-side prediction of the local player: every input sent moves the
// player at once, and each snapshot resets it to the server's position
// with the inputs the server has not applied yet replayed on top
// (docs/protocol.md, "Commands": reconcile on ackSeq). Closed doors block
// it as they block the server (useDoors).

import { withClosedDoors } from './doors.js';
import { move, type Walkable } from './move.js';
import type { Entity, Input } from './protocol.js';
import type { StaticWorld } from './world.js';

/** Map sizes are at most 4096 units: positions quantize to 1/16 in a uint16. */
const MAX_MAP_SIZE = 4096;

export class Predictor {
  private readonly inputs: Input[] = [];
  private readonly static: StaticWorld | undefined;
  private world: Walkable;
  private px = 0;
  private py = 0;

  /**
   * world gives the colliders; without it nothing blocks but the bounds
   * (bounds when given, else the largest map there can be).
   */
  constructor(
    world: StaticWorld | undefined,
    private dist: number,
    bounds?: { width: number; height: number },
  ) {
    this.static = world;
    this.world = world ?? openWorld(bounds?.width ?? MAX_MAP_SIZE, bounds?.height ?? MAX_MAP_SIZE);
  }

  /**
   * The entities of the newest snapshot: the doors among them that are
   * closed block the predicted movement from now on, those that are open
   * (or out of view) do not. Call it before reconcile. Without a world
   * there are no doors to block.
   */
  useDoors(entities: Iterable<Entity>): void {
    if (this.static !== undefined) this.world = withClosedDoors(this.static, entities);
  }

  /** The distance one input covers (stepDistance, or encumberedStepDistance for a loaded player). */
  get stepDistance(): number {
    return this.dist;
  }

  /**
   * The distance inputs cover from now on: the player's speed changed (its
   * weight crossed bag.encumberedAt). The next reconcile replays the
   * pending inputs with it too, as the server applies them at its current
   * speed.
   */
  set stepDistance(dist: number) {
    this.dist = dist;
  }

  /** What blocks the predicted movement now: the world and its closed doors in view. */
  get walkable(): Walkable {
    return this.world;
  }

  /** Inputs sent that no snapshot has acknowledged yet. */
  get pending(): number {
    return this.inputs.length;
  }

  get x(): number {
    return this.px;
  }

  get y(): number {
    return this.py;
  }

  /** An input sent (its direction as the server will apply it): the player moves now. */
  record(input: Input): void {
    this.inputs.push(input);
    this.step(input);
  }

  /**
   * Drops the inputs ackSeq covers and replays the rest from the server's
   * position; returns the predicted position.
   */
  reconcile(serverX: number, serverY: number, ackSeq: number): { x: number; y: number } {
    const firstPending = this.inputs.findIndex((input) => input.seq > ackSeq);
    this.inputs.splice(0, firstPending === -1 ? this.inputs.length : firstPending);
    this.px = serverX;
    this.py = serverY;
    for (const input of this.inputs) this.step(input);
    return { x: this.px, y: this.py };
  }

  private step(input: Input): void {
    ({ x: this.px, y: this.py } = move(this.world, this.px, this.py, input.x, input.y, this.dist));
  }
}

/** A world without colliders: only leaving [0, width) x [0, height) is blocked. */
function openWorld(width: number, height: number): Walkable {
  return { blocked: (x, y) => !(x >= 0 && y >= 0 && x < width && y < height) };
}
