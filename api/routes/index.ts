// Every resource's route module, registered under /v1 by app.ts, and the named schemas
// (OpenAPI components) they reference. Later resources add their lines here.
import type { TSchema } from '@sinclair/typebox';
import account, { Account } from './account';
import catalog, { Offer, Product } from './catalog';
import customers, { Customer } from './customers';
import orders, { Order } from './orders';

export const routeModules = [account, customers, orders, catalog];

export const componentSchemas: TSchema[] = [Account, Customer, Order, Offer, Product];
