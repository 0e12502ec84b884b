/** The public contract of `assistant-relay`: the embedding API, the agent port, and the wire types. */
export { createAssistantHost, type AssistantHost, type AssistantHostOptions, type ReasoningChannelOptions } from './adapters/host/host.js';
export type { ListenOptions } from './adapters/http/app.js';
export { createBackendRelay, type BackendRelay, type BackendRelayOptions } from './adapters/backend/relay.js';
export type { InspectOption } from './adapters/inspector/process.js';
export type { StatelyInspector } from './adapters/inspector/stately.js';
export { Plugin, startPlugin, type PluginOptions, type PluginStatus } from './adapters/plugin/index.js';
export { builtinReasoner, commandReasoner, openAiReasoner } from './adapters/reasoners/index.js';
export {
  PairingFailed,
  pairAsAssistant,
  pairAsClient,
  type ConfirmSas,
  type Paired,
  type PairingOptions,
} from './adapters/client/pairing.js';
export {
  FormBClient,
  type ConversationContext,
  type ConversationEntry,
  type ConversationStore,
  type FormBClientOptions,
} from './adapters/client/form-b.js';
export {
  AssistantKeys,
  AssistantKeysFile,
  ClientKeysFile,
  KeysFileError,
  keyringOfFile,
  readKeysFile,
  storedKeys,
  writeKeysFile,
} from './storage/keys-file.js';
export { ReasonerError, type Reasoner, type ReasoningRequest } from './adapters/reasoners/reasoner.js';
export { approvalsAgent, echoAgent, scriptAgent, insightsAgent, BUILTIN_AGENTS, type BuiltinAgentName } from './adapters/agents/index.js';
export type { Agent, ReplySink, Turn, MemoryEntry } from './engine/chat/agent.js';
export type { Clock, IdSource } from './engine/core/clock.js';
export type { ConversationView, DeliveryStats, SessionView, TaskSessionView } from './engine/chat/view.js';
export type { DomainEvent, DomainEventType, EndReason, SettleCause } from './machines/chat/events.js';
export type { SessionLimits } from './machines/chat/task-session.js';
export {
  EventLogError,
  EventLogClosedError,
  EventLogLockedError,
  EventLogPermissionsError,
  EventLogWriteError,
  SchemaMismatchError,
  type EventLogErrorCode,
} from './storage/errors.js';
export type { LockHolder } from './storage/lock-holder.js';
export * as protocol from './protocol/index.js';
