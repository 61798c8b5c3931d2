/** The CoAP transport: messages, options, block-wise, Observe, and the endpoint that ties them to a Transport. */
export {
  codeByte,
  codeClass,
  codeOf,
  CoapFormatError,
  decodeMessage,
  describeMessage,
  EMPTY_CODE,
  emptyMessage,
  encodedSize,
  encodeMessage,
  isRequestCode,
  isResponseCode,
  isSuccess,
  Method,
  ResponseCode,
  type CoapCode,
  type CoapMessage,
  type CoapOption,
  type MessageType,
} from './message.js';
export {
  accept,
  checkOptions,
  contentFormat,
  decodeUint,
  encodeUint,
  etag,
  isCritical,
  locationPath,
  maxAge,
  observe,
  option,
  OptionNumber,
  optionValue,
  optionValues,
  size1,
  size2,
  uriPath,
  uriPathOptions,
  uriQuery,
  uriQueryOptions,
  withOption,
  withoutOptions,
  type OptionCheck,
} from './options.js';
export { block1, block2, blockSize, BlockOptionError, decodeBlock, encodeBlock, formatBlock, MAX_SZX, szxFor, type BlockOption } from './block.js';
export { CoapError, type CoapErrorCode } from './coap-error.js';
export { DEFAULT_TRANSMISSION, deriveTimes, type DerivedTimes, type TransmissionParameters } from './parameters.js';
export { formatPeer, peerKey, UdpTransport, type BoundAddress, type DatagramListener, type Peer, type Transport, type UdpTransportOptions } from './transport.js';
export { isNewerNotification, type Observer } from './observers.js';
export type { RateLimit } from '../domain/rate-limit.js';
export type { Block1Limits } from './block1-assembler.js';
export type { StoreLimits } from './bounded-store.js';
export type { ObserverLimits } from './observers.js';
export {
  CoapEndpoint,
  type CoapEndpointOptions,
  type CoapRequest,
  type CoapResponse,
  type CoapStats,
  type CoapTableSizes,
  type NotifyOptions,
  type Observation,
  type ObserveOptions,
  type RequestHandler,
  type RequestOptions,
} from './endpoint.js';
