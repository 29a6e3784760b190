module.exports = process.getBuiltinModule('node:console');
