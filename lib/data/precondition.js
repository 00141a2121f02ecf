export {};
//# sourceMappingURL=precondition.js.map