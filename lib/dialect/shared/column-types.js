export {};
//# sourceMappingURL=column-types.js.map