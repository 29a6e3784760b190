/**
 * Internal SDK modules some tests read to compare our layout with the SDK's own (they ship without declarations):
 * the DynamoDB model's schemas, whose 5th element lists a structure's members in the order the SDK writes them.
 */
declare module '@aws-sdk/client-dynamodb/dist-es/schemas/schemas_0.js' {
  type Schema = readonly unknown[];
  export const GetItemInput$: Schema;
  export const PutItemInput$: Schema;
  export const UpdateItemInput$: Schema;
  export const DeleteItemInput$: Schema;
  export const QueryInput$: Schema;
  export const TransactWriteItemsInput$: Schema;
  export const TransactWriteItem$: Schema;
  export const ConditionCheck$: Schema;
  export const Put$: Schema;
  export const Delete$: Schema;
  export const Update$: Schema;
  export const BatchGetItemInput$: Schema;
  export const KeysAndAttributes$: Schema;
}
