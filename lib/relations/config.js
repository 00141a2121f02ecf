export {};
//# sourceMappingURL=config.js.map