// Debian's commander (9) with the one method OpenClaw's CLI calls that came in commander 12:
// Command.helpCommand(nameAndArgs, description), which 9 spells addHelpCommand.
import commander from "/usr/share/nodejs/commander/index.js";
const { Command } = commander;
if (typeof Command.prototype.helpCommand !== "function") {
  Command.prototype.helpCommand = function (nameAndArgs, description) {
    return this.addHelpCommand(nameAndArgs, description);
  };
}
export const { Argument, CommanderError, Help, InvalidArgumentError, InvalidOptionArgumentError, Option, createArgument, createCommand, createOption, program } = commander;
export { Command };
export default commander;
