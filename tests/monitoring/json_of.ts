// The JSON form of a TypeScript type, for tests/monitoring/dashboard_types.sh.
// A type as JSON spells it: TypeScript's string enums (FieldColorModeId, ThresholdsMode, ...)
// accept only their members, while a dashboard's JSON holds their values.
export type JsonOf<T> = T extends string ? `${T}` : T extends number | boolean | null | undefined ? T : { [K in keyof T]: JsonOf<T[K]> };
