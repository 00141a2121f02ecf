export {};
//# sourceMappingURL=relation-link.js.map