// The lobby on the join form: the rooms of the namespace typed in, from
// the join API's lobby (GET /v1/namespaces/{ns}/gamerooms), with their
// phase and players; choosing one fills the form's room.

import type { JoinAPI, RoomSummary } from '../src/index.js';
import { describeError } from './session.js';

/** How often the list is asked for again while the form shows. */
const REFRESH_MS = 5_000;

export class Lobby {
  private namespace = '';
  private timer: ReturnType<typeof setInterval> | undefined;

  constructor(
    private readonly api: JoinAPI,
    private readonly list: HTMLUListElement,
    private readonly choose: (room: RoomSummary) => void,
  ) {}

  /** Lists the namespace's rooms now and every REFRESH_MS until stop. */
  show(namespace: string): void {
    this.namespace = namespace;
    this.stop();
    void this.refresh();
    this.timer = setInterval(() => void this.refresh(), REFRESH_MS);
  }

  stop(): void {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
  }

  private async refresh(): Promise<void> {
    const namespace = this.namespace;
    try {
      const page = await this.api.rooms({ namespace, limit: 50 });
      if (namespace === this.namespace) this.render(page.rooms);
    } catch (err) {
      if (namespace === this.namespace) this.message(`the lobby is unavailable: ${describeError(err)}`);
    }
  }

  private render(rooms: RoomSummary[]): void {
    if (rooms.length === 0) {
      this.message(`no rooms in ${this.namespace}`);
      return;
    }
    this.list.replaceChildren(...rooms.map((room) => this.item(room)));
  }

  /** One room: a button with its name, phase and players; data- attributes for tests. */
  private item(room: RoomSummary): HTMLLIElement {
    const li = document.createElement('li');
    li.dataset.room = room.name;
    li.dataset.players = String(room.players);
    li.dataset.joinable = String(room.joinable);
    const button = document.createElement('button');
    button.type = 'button';
    button.textContent = room.name;
    button.addEventListener('click', () => this.choose(room));
    const info = document.createElement('span');
    const maps = room.maps.map(mapText).join(', ');
    info.textContent = ` ${room.phase || 'Pending'}, ${room.players}/${room.capacity} players (${maps})`;
    li.append(button, info);
    return li;
  }

  private message(text: string): void {
    const li = document.createElement('li');
    li.className = 'empty';
    li.textContent = text;
    this.list.replaceChildren(li);
  }
}

/** One map as the lobby shows it: town 3/100, a sharded town 130/200 in 2 shards, crypt 2. */
function mapText(m: RoomSummary['maps'][number]): string {
  if (m.instanced) return `${m.name} ${m.players}`;
  const shards = m.shards ?? 1;
  if (shards > 1 || (m.maxShards ?? 1) > 1) return `${m.name} ${m.players}/${m.capacity * shards} in ${shards} of ${m.maxShards ?? 1} shards`;
  return `${m.name} ${m.players}/${m.capacity}`;
}
