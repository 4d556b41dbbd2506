// Opening one connection to a map: the WebSocket with the protocol's
// subprotocol, the hello, and the wait for welcome (docs/protocol.md,
// "Joining and resuming"). What follows the welcome belongs to the client.

import { PROTOCOL_VERSION, RoomError, SUBPROTOCOL, type Envelope, type Hello, type ServerErrorPayload, type Transfer, type Welcome } from './protocol.js';

/** A WebSocket constructor: the browser's, or `ws` in node. */
export type WebSocketConstructor = new (url: string, protocols?: string | string[]) => WebSocket;

/** What a welcomed connection reports to its owner. */
export interface LinkHandlers {
  message(data: string | ArrayBuffer, bytes: number): void;
  close(code: number, reason: string): void;
}

export interface DialOptions {
  WebSocket: WebSocketConstructor;
  endpoint: string;
  hello: Hello;
  timeoutMs: number;
  /** Aborting closes the connection and rejects with RoomError 'closed'. */
  signal: AbortSignal;
  /**
   * Called on the welcome, before any later message of the connection is
   * handled (ws in node delivers several frames of one read in a row, so a
   * promise would come too late). It returns the connection's handlers,
   * or throws a RoomError to refuse the welcome (the connection is closed).
   */
  accept(welcome: Welcome, socket: WebSocket): LinkHandlers;
}

/** WebSocket.OPEN; the constant is not on every implementation's constructor. */
export const OPEN = 1;

/**
 * Connects, says hello and resolves with the welcome once accept took it.
 * Rejects with RoomError: the server's code when it refused the hello,
 * 'transferred' (with the transfer) when it answered a resume with the
 * transfer of a seat that left meanwhile, 'connection_failed' when the
 * connection failed or closed first, or accept's error.
 */
export function dial(o: DialOptions): Promise<Welcome> {
  return new Promise((resolve, reject) => {
    if (o.signal.aborted) {
      reject(new RoomError('closed', 'the client is closed'));
      return;
    }
    let socket: WebSocket;
    try {
      socket = new o.WebSocket(o.endpoint, SUBPROTOCOL);
    } catch (err) {
      reject(new RoomError('connection_failed', `connecting to ${o.endpoint}: ${message(err)}`));
      return;
    }
    socket.binaryType = 'arraybuffer';
    let refusal: ServerErrorPayload | undefined;
    let timer: ReturnType<typeof setTimeout> | undefined;

    const settle = (err?: RoomError, welcome?: Welcome): void => {
      clearTimeout(timer);
      o.signal.removeEventListener('abort', onAbort);
      if (err !== undefined) {
        detach(socket);
        if (socket.readyState <= OPEN) socket.close(1000);
        reject(err);
      } else if (welcome !== undefined) {
        resolve(welcome);
      }
    };
    const onAbort = (): void => settle(new RoomError('closed', 'the client is closed'));
    timer = setTimeout(
      () => settle(new RoomError('connection_failed', `no welcome from ${o.endpoint} within ${o.timeoutMs} ms`)),
      o.timeoutMs,
    );
    o.signal.addEventListener('abort', onAbort);

    socket.onopen = () => socket.send(JSON.stringify({ v: PROTOCOL_VERSION, kind: 'hello', payload: o.hello }));
    socket.onerror = () => {}; // a close event follows, with the code
    socket.onclose = (ev) => {
      if (refusal !== undefined) settle(new RoomError(refusal.code, refusal.message));
      else if (ev.code === 1008 && ev.reason !== '') settle(new RoomError(ev.reason, `the server refused the hello: ${ev.reason}`));
      else settle(new RoomError('connection_failed', `${o.endpoint} closed with ${ev.code} before welcome${ev.reason ? `: ${ev.reason}` : ''}`));
    };
    socket.onmessage = (ev: MessageEvent<unknown>) => {
      if (typeof ev.data !== 'string') return; // nothing binary comes before welcome
      const env = parseEnvelope(ev.data);
      if (env?.kind === 'error') {
        // The server closes with 1008 right after; keep the code it named.
        refusal = env.payload as ServerErrorPayload;
      } else if (env?.kind === 'transfer') {
        // A resume of a seat that left through a portal while the client
        // was away: the answer is its transfer, for the caller to follow.
        settle(new RoomError('transferred', 'the player left through a portal meanwhile: follow the transfer', env.payload as Transfer));
      } else if (env?.kind === 'welcome') {
        const welcome = env.payload as Welcome;
        let handlers: LinkHandlers;
        try {
          handlers = o.accept(welcome, socket);
        } catch (err) {
          settle(err instanceof RoomError ? err : new RoomError('internal', message(err)));
          return;
        }
        attach(socket, handlers);
        settle(undefined, welcome);
      }
    };
  });
}

/** Routes a welcomed connection's frames and close to handlers. */
function attach(socket: WebSocket, h: LinkHandlers): void {
  socket.onmessage = (ev: MessageEvent<unknown>) => {
    const data = ev.data;
    if (typeof data === 'string') h.message(data, utf8Length(data));
    else if (data instanceof ArrayBuffer) h.message(data, data.byteLength);
    else if (ArrayBuffer.isView(data)) h.message(toArrayBuffer(data), data.byteLength);
  };
  socket.onclose = (ev) => h.close(ev.code, ev.reason);
}

/** Stops every callback of socket, before it is closed or given up. */
export function detach(socket: WebSocket): void {
  socket.onopen = null;
  socket.onmessage = null;
  socket.onclose = null;
  socket.onerror = () => {}; // ws throws an 'error' without a listener
}

/** A server envelope, or undefined for anything that is not one. */
export function parseEnvelope(text: string): Envelope | undefined {
  let env: unknown;
  try {
    env = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof env !== 'object' || env === null || Array.isArray(env)) return undefined;
  const e = env as Envelope;
  return e.v === PROTOCOL_VERSION && typeof e.kind === 'string' ? e : undefined;
}

function toArrayBuffer(view: ArrayBufferView): ArrayBuffer {
  return new Uint8Array(view.buffer, view.byteOffset, view.byteLength).slice().buffer;
}

/** The UTF-8 size of a string, for the traffic counters. */
function utf8Length(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c <= 0xdbff) {
      n += 4; // a surrogate pair
      i++;
    } else n += 3;
  }
  return n;
}

function message(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
