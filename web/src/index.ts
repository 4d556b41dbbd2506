// The Roomkeeper TypeScript SDK: the public API (see docs/protocol.md for
// the wire protocol it speaks).

export {
  EntityKind,
  ErrorCode,
  EventType,
  PROTOCOL_VERSION,
  ProtocolError,
  RoomError,
  SUBPROTOCOL,
  type Ack,
  type Entity,
  type GameEvent,
  type Input,
  type Item,
  type Portal,
  type SnapshotMessage,
  type Transfer,
  type Welcome,
} from './protocol.js';
export {
  DIRECTION_SCALE,
  MAX_BINARY_INPUTS,
  POSITION_SCALE,
  decodeBinarySnapshot,
  dequantize,
  encodeBinaryInput,
  peekBinaryHeader,
  quantize,
  quantizeDirection,
  type SnapshotHeader,
} from './codec.js';
export { SnapshotHistory, applyJSONSnapshot } from './snapshot.js';
export { loadMapgen, type Mapgen, type Point, type StaticWorld } from './world.js';
export { move, stepDistance, type Walkable } from './move.js';
export { Predictor } from './predict.js';
export { Interpolator } from './interpolate.js';
export { JoinAPI, JoinAPIError, type Character, type JoinRequest, type JoinResponse } from './joinapi.js';
export { RoomClient, type ClientEvents, type ClientOptions, type ClientState } from './client.js';
export type { WebSocketConstructor } from './dial.js';
