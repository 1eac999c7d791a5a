// Intentionally empty: see package.json.
export {};
