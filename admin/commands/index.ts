// Every admin command by name; later areas (subscriptions, provider notices) add their table here.
import { catalogCommands } from './catalog';
import { demoCommands } from './demo';
import { keyCommands } from './keys';
import { logCommands } from './logs';
import { orderCommands } from './orders';
import { storeCommands } from './stores';
import { subscriptionCommands } from './subscriptions';
import type { Command } from './types';

export type { Command, CommandContext } from './types';

export const commands: Record<string, Command> = {
  ...storeCommands,
  ...keyCommands,
  ...catalogCommands,
  ...logCommands,
  ...demoCommands,
  ...subscriptionCommands,
  ...orderCommands,
};
