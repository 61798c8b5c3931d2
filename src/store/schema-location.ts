/**
 * Table shapes of location: location services and their cell/Wi-Fi data, usage, geofences and endpoint positions.
 * Part of the schema; schema.ts (which re-exports them) holds `Schema` and the column conventions.
 */

export interface LocationServicesTable {
  id: string;
  account_id: string;
  name: string;
  /** embedded, google, unwiredlabs, nominatim. */
  type: string;
  /** Fallback order within the account, from 0. */
  position: number;
  url: string | null;
  /** Write-only: never returned by the API. */
  api_key: string | null;
  created_at: number;
  updated_at: number;
}

export interface LocationCellsTable {
  service_id: string;
  /** OpenCelliD's radio: GSM, UMTS, CDMA, LTE, NR. */
  radio: string;
  mcc: number;
  mnc: number;
  area: number;
  cell: number;
  lat: number;
  lon: number;
  range: number;
  samples: number;
}

export interface LocationWifiTable {
  service_id: string;
  /** Lower case, colon-separated. */
  mac: string;
  lat: number;
  lon: number;
  range: number;
}

export interface LocationUsageTable {
  account_id: string;
  /** UTC day, YYYY-MM-DD. */
  day: string;
  /** geolocate, geolocate:<provider type>, forward, reverse, geofence-eval. */
  kind: string;
  count: number;
}

export interface GeofencesTable {
  id: string;
  account_id: string;
  name: string;
  description: string | null;
  /** JSON: string[]. */
  tags: string;
  /** JSON: {geometry} or {circle}. */
  shape: string;
  created_at: number;
  updated_at: number;
}

export interface GeofencePresenceTable {
  endpoint_id: string;
  geofence_id: string;
  entered_at: number;
}

export interface EndpointPositionsTable {
  endpoint_id: string;
  account_id: string;
  lat: number;
  lon: number;
  accuracy: number | null;
  source: string;
  at: number;
}
