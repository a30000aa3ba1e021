/** A control character (C0 or DEL): never part of a path, a name or a metadata string. */
export const CONTROL_CHARACTER = /[\u0000-\u001f\u007f]/;
