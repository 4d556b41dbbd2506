// The Roomkeeper TypeScript SDK: the public API (see docs/protocol.md for
// the wire protocol it speaks).

export {
  CombatState,
  DoorDetail,
  DoorState,
  EQUIPMENT_SLOTS,
  EffectState,
  EntityKind,
  ErrorCode,
  EventType,
  PROTOCOL_VERSION,
  ProtocolError,
  RoomError,
  SUBPROTOCOL,
  combatState,
  isEvent,
  type Ack,
  type Bag,
  type BossPhaseEvent,
  type DoorEvent,
  type Entity,
  type GameEvent,
  type Input,
  type Inventory,
  type Item,
  type Portal,
  type RoomClearedEvent,
  type Session,
  type Skill,
  type Slot,
  type SnapshotMessage,
  type Transfer,
  type TypedEvents,
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
export { loadMapgen, type Door, type Mapgen, type Point, type Room, type StaticWorld } from './world.js';
export { DOOR_REACH, doorCentre, doorDistance, doorOf, isDoorLocked, isDoorOpen, withClosedDoors } from './doors.js';
export { bagItems, isSlot, parseInventory, toInventory, wornItems } from './inventory.js';
export { encumberedStepDistance, move, speedFactor, stepDistance, type Encumbrance, type Walkable } from './move.js';
export { Predictor } from './predict.js';
export { Interpolator } from './interpolate.js';
export {
  JoinAPI,
  JoinAPIError,
  contentPack,
  type Character,
  type EnemyDefinition,
  type ItemDefinition,
  type JoinRequest,
  type JoinResponse,
  type LobbyQuery,
  type MapSummary,
  type PackDefinitions,
  type Party,
  type ResumeResponse,
  type RoomContent,
  type RoomList,
  type RoomSummary,
} from './joinapi.js';
export { RoomClient, type ClientEvents, type ClientOptions, type ClientState } from './client.js';
export type { WebSocketConstructor } from './dial.js';
