export {};
//# sourceMappingURL=dialect.js.map